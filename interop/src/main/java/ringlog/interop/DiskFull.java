package ringlog.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;

/**
 * disk-full (issue 14 item 4): the bookie's data directory is on a small file system of its
 * own (scripts/disk_full.sh mounts one). Ledgers are written until adds fail; the bookie must
 * then be listed under available/readonly. Most ledgers are deleted; without a restart, free
 * space must come back, the bookie must be listed as writable again and a new ledger must take
 * adds. The kept ledgers and the new one then read back byte for byte.
 */
final class DiskFull {
    /** ringlog's --segment-size here: a 1 GiB file system holds dozens of segments. */
    static final int SEGMENT_SIZE = 16 << 20;
    /** Large entries fill the file system in seconds instead of minutes. */
    static final int ENTRY_SIZE_MIN = 16 << 10;
    static final int ENTRY_SIZE_MAX = 64 << 10;
    /** About 40 MB per ledger: each spans two or three segments of its own. */
    static final int ENTRIES_PER_LEDGER = 1_000;
    static final int ENTRIES_AFTER = 200;
    static final int KEPT_COUNT = 2;
    static final int OUTSTANDING_MAX = 64;
    static final int READ_BATCH_COUNT = 100;
    static final long MIB = 1 << 20;

    private DiskFull() {}

    /** What one ledger's adds did: the bytes acknowledged, and the first error, if any. */
    private record Fill(long bytesAcked, String error) {}

    /** The ledgers written until the file system filled, in order, and the first error. */
    private record Filled(List<Long> ids, long bytesAcked, String error) {}

    /** Seconds from the deletions to each sign of recovery, and the ledger that took adds. */
    private record Recovery(double freeSeconds, double writableSeconds, double addSeconds,
            LedgerHandle ledger) {}

    static String run(Cluster cluster) throws Exception {
        Bookie bookie = cluster.bookies.get(0);
        long pid = bookie.pid();
        FileStore store = Files.getFileStore(bookie.dataDirectory());
        long freeStart = store.getUsableSpace();
        BookKeeper client = cluster.client(conf -> { });

        Scenarios.step("fill the file system until an add fails");
        long fillStart = System.nanoTime();
        Filled filled = fillUntilError(client, store.getTotalSpace());
        List<Long> ids = filled.ids();
        long failed = System.nanoTime();
        long freeFull = store.getUsableSpace();
        Check.that(ids.size() > KEPT_COUNT + 1, "the file system filled after " + ids.size()
                + " ledgers; the scenario keeps " + KEPT_COUNT + " and deletes the rest");

        Scenarios.step("wait for the bookie under available/readonly");
        String id = bookie.id();
        long deadline = failed + TimeUnit.SECONDS.toNanos(10);
        while (!(cluster.zk.readOnlyRegistration(id) != null
                && cluster.zk.registration(id) == null) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        Check.that(cluster.zk.readOnlyRegistration(id) != null, "adds failed ("
                + filled.error() + ") but the bookie is not under " + EmbeddedZooKeeper.READONLY);
        Check.that(cluster.zk.registration(id) == null,
                "the bookie is read-only and still under " + EmbeddedZooKeeper.AVAILABLE);
        double readOnlySeconds = Scenarios.seconds(System.nanoTime() - failed);

        Scenarios.step("deleteLedger x" + (ids.size() - KEPT_COUNT));
        for (long ledger : ids.subList(KEPT_COUNT, ids.size())) {
            client.deleteLedger(ledger);
        }
        long deleted = System.nanoTime();

        Scenarios.step("wait for space, the writable registration and an accepted add");
        // Most of the data is deleted: at least half of what filling took must come back.
        long freeWanted = freeFull + (freeStart - freeFull) / 2;
        Recovery recovery = waitForRecovery(cluster, client, store, id, freeWanted, deleted);
        Scenarios.step("write a new ledger");
        LedgerHandle after = recovery.ledger();
        Fill fill = addUntilError(after, 1, ENTRIES_AFTER);
        Check.that(fill.error() == null, "an add after recovery failed: " + fill.error());
        after.close();
        long freeAfter = freeSettled(store);

        Scenarios.step("read the kept ledgers and the new one back");
        BookKeeper reader = cluster.client(conf -> { });
        List<Long> check = new ArrayList<>(ids.subList(0, KEPT_COUNT));
        check.add(after.getId());
        long entriesRead = 0;
        for (long ledger : check) {
            LedgerHandle handle = reader.openLedger(ledger, DigestType.CRC32C,
                    Scenarios.PASSWORD);
            long count = readAndVerify(handle, ledger);
            Check.equal(ledger == after.getId() ? ENTRIES_AFTER : ENTRIES_PER_LEDGER, count,
                    "entries of ledger " + ledger);
            entriesRead += count;
            handle.close();
        }
        Check.that(bookie.alive() && bookie.pid() == pid,
                "the bookie was restarted or exited (pid " + pid + ")");
        printBookieMoves(bookie);
        return String.format("fs_mib=%d bytes_written_until_full=%d ledgers=%d fill_s=%.1f"
                + " readonly_zk_s=%.2f deleted=%d free_start_mib=%d free_full_mib=%d"
                + " free_after_mib=%d free_back_s=%.1f writable_zk_s=%.1f add_back_s=%.1f"
                + " entries_verified=%d restarts=0 first_error=\"%s\"",
                store.getTotalSpace() / MIB, filled.bytesAcked(), ids.size(),
                Scenarios.seconds(failed - fillStart), readOnlySeconds, ids.size() - KEPT_COUNT,
                freeStart / MIB, freeFull / MIB, freeAfter / MIB, recovery.freeSeconds(),
                recovery.writableSeconds(), recovery.addSeconds(), entriesRead,
                filled.error());
    }

    /** Ledgers of ENTRIES_PER_LEDGER entries, each closed before the next, until one fails. */
    private static Filled fillUntilError(BookKeeper client, long total) throws Exception {
        List<Long> ids = new ArrayList<>();
        long bytesAcked = 0;
        long ledgersMax = total / (ENTRIES_PER_LEDGER * (long) ENTRY_SIZE_MIN) + 2;
        while (true) {
            Check.that(ids.size() < ledgersMax, "wrote " + ids.size() + " ledgers ("
                    + bytesAcked + " bytes) on a file system of " + total
                    + " bytes and no add failed");
            LedgerHandle handle;
            try {
                handle = client.createLedger(1, 1, 1, DigestType.CRC32C, Scenarios.PASSWORD);
            } catch (BKException e) {
                // Read-only between two ledgers: the client finds no writable bookie.
                return new Filled(ids, bytesAcked, "createLedger: " + e.getMessage());
            }
            ids.add(handle.getId());
            Fill fill = addUntilError(handle, 0, ENTRIES_PER_LEDGER);
            bytesAcked += fill.bytesAcked();
            try {
                handle.close();
            } catch (BKException e) {
                // A ledger whose adds failed may not close cleanly; it is deleted later.
                Check.that(fill.error() != null, "close of a complete ledger failed: " + e);
            }
            if (fill.error() != null) {
                return new Filled(ids, bytesAcked, fill.error());
            }
        }
    }

    /**
     * Polls until free space reaches `freeWanted` and a new ledger takes an add (tried once
     * the bookie is listed as writable again), at most 90 s after `deleted`.
     */
    private static Recovery waitForRecovery(Cluster cluster, BookKeeper client, FileStore store,
            String id, long freeWanted, long deleted) throws Exception {
        double freeSeconds = -1;
        double writableSeconds = -1;
        long deadline = deleted + TimeUnit.SECONDS.toNanos(90);
        while (true) {
            Check.that(System.nanoTime() < deadline, String.format("90 s after the deletions:"
                    + " free %d of %d MiB wanted, writable registration %s, add accepted no",
                    store.getUsableSpace() / MIB, freeWanted / MIB, writableSeconds >= 0));
            double now = Scenarios.seconds(System.nanoTime() - deleted);
            if (freeSeconds < 0 && store.getUsableSpace() >= freeWanted) {
                freeSeconds = now;
            }
            if (writableSeconds < 0 && cluster.zk.registration(id) != null
                    && cluster.zk.readOnlyRegistration(id) == null) {
                writableSeconds = now;
            }
            if (writableSeconds >= 0) {
                LedgerHandle ledger = addOne(client);
                if (ledger != null) {
                    double addSeconds = Scenarios.seconds(System.nanoTime() - deleted);
                    freeSeconds = waitForFree(store, freeWanted, deleted, deadline, freeSeconds);
                    return new Recovery(freeSeconds, writableSeconds, addSeconds, ledger);
                }
            }
            Thread.sleep(50);
        }
    }

    /** `freeSeconds` if already known, else the seconds after `deleted` free space took. */
    private static double waitForFree(FileStore store, long freeWanted, long deleted,
            long deadline, double freeSeconds) throws Exception {
        while (freeSeconds < 0) {
            Check.that(System.nanoTime() < deadline, "90 s after the deletions: free "
                    + store.getUsableSpace() / MIB + " of " + freeWanted / MIB + " MiB wanted");
            if (store.getUsableSpace() >= freeWanted) {
                freeSeconds = Scenarios.seconds(System.nanoTime() - deleted);
            } else {
                Thread.sleep(50);
            }
        }
        return freeSeconds;
    }

    /** The bookie's own account of the moves, printed above the PASS line. */
    private static void printBookieMoves(Bookie bookie) throws Exception {
        for (String line : Files.readAllLines(bookie.log(), StandardCharsets.UTF_8)) {
            if (line.contains("read-only") || line.contains("writable again")
                    || line.contains("gc: deleting")) {
                System.out.println("# bookie: " + line);
            }
        }
    }

    /**
     * Adds entries first..count-1 with up to OUTSTANDING_MAX outstanding; stops at the first
     * failure and waits for the rest to come back.
     */
    private static Fill addUntilError(LedgerHandle handle, int first, int count)
            throws Exception {
        Semaphore outstanding = new Semaphore(OUTSTANDING_MAX);
        AtomicReference<String> error = new AtomicReference<>();
        AtomicLong bytes = new AtomicLong();
        for (int index = first; index < count && error.get() == null; index++) {
            outstanding.acquire();
            byte[] body = Entries.body(handle.getId(), index, ENTRY_SIZE_MIN, ENTRY_SIZE_MAX);
            handle.asyncAddEntry(body, (rc, lh, entryId, ctx) -> {
                if (rc == BKException.Code.OK) {
                    bytes.addAndGet(body.length);
                } else {
                    error.compareAndSet(null, "entry " + ctx + ": " + BKException.getMessage(rc)
                            + " (" + rc + ")");
                }
                outstanding.release();
            }, index);
        }
        Check.that(outstanding.tryAcquire(OUTSTANDING_MAX, 60, TimeUnit.SECONDS),
                "adds still outstanding after 60 s");
        return new Fill(bytes.get(), error.get());
    }

    /** A new ledger holding entry 0, or null while no writable bookie takes it. */
    private static LedgerHandle addOne(BookKeeper client) throws Exception {
        LedgerHandle handle;
        try {
            handle = client.createLedger(1, 1, 1, DigestType.CRC32C, Scenarios.PASSWORD);
        } catch (BKException e) {
            return null;
        }
        Fill fill = addUntilError(handle, 0, 1);
        if (fill.error() == null) {
            return handle;
        }
        try {
            handle.close();
            client.deleteLedger(handle.getId());
        } catch (BKException e) {
            // A failed try; the next one uses a new ledger.
        }
        return null;
    }

    /** Free bytes once they stop changing for 1 s (at most 15 s): removals come in turns. */
    private static long freeSettled(FileStore store) throws Exception {
        long last = store.getUsableSpace();
        for (int turn = 0; turn < 15; turn++) {
            Thread.sleep(1_000);
            long now = store.getUsableSpace();
            if (now == last) {
                break;
            }
            last = now;
        }
        return last;
    }

    private static long readAndVerify(LedgerHandle handle, long ledger) throws Exception {
        long last = handle.getLastAddConfirmed();
        Check.that(last >= 0, "ledger " + ledger + " reads back empty");
        long expected = 0;
        for (long first = 0; first <= last; first += READ_BATCH_COUNT) {
            Enumeration<LedgerEntry> entries =
                    handle.readEntries(first, Math.min(last, first + READ_BATCH_COUNT - 1));
            while (entries.hasMoreElements()) {
                LedgerEntry entry = entries.nextElement();
                Check.equal(expected, entry.getEntryId(), "entry id in read order");
                Entries.verify(ledger, entry.getEntryId(), entry.getEntry(), ENTRY_SIZE_MIN,
                        ENTRY_SIZE_MAX);
                expected += 1;
            }
        }
        Check.equal(last + 1, expected, "entries read back from ledger " + ledger);
        return expected;
    }
}
