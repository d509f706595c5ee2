package ringlog.interop;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.List;
import java.util.NavigableMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.api.LastConfirmedAndEntry;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.client.api.WriteFlag;
import org.apache.bookkeeper.client.api.WriteHandle;
import org.apache.bookkeeper.net.BookieId;

/**
 * The compatibility scenarios. Each runs against a fresh Cluster, throws Check.Failure (or any
 * client exception) when an expectation fails, and returns the numbers for its PASS line.
 */
final class Scenarios {
    static final byte[] PASSWORD = "ringlog-interop".getBytes(StandardCharsets.UTF_8);
    static final int SYNC_ENTRY_COUNT = 10_000;
    static final int READ_BATCH_COUNT = 1_000;

    /** What the running scenario is doing; a FAIL line names it ("at: ..."). */
    static volatile String step = "start";

    private Scenarios() {}

    static void step(String name) {
        step = name;
    }

    /** 1. Sync adds, read back, close, reopen from a fresh client and read again. */
    static String syncWriteRead(Cluster cluster, boolean v2) throws Exception {
        DigestType digest = v2 ? DigestType.CRC32C : DigestType.CRC32;
        BookKeeper writer = cluster.client(conf -> {
            if (v2) {
                Cluster.pulsarLike(conf);
            }
        });
        step("createLedger");
        LedgerHandle handle = writer.createLedger(1, 1, 1, digest, PASSWORD);
        long ledgerId = handle.getId();
        step("addEntry x" + SYNC_ENTRY_COUNT);
        long[] latencies = new long[SYNC_ENTRY_COUNT];
        long writeStart = System.nanoTime();
        for (int index = 0; index < SYNC_ENTRY_COUNT; index++) {
            long start = System.nanoTime();
            long entryId = handle.addEntry(Entries.body(ledgerId, index));
            latencies[index] = System.nanoTime() - start;
            Check.equal(index, entryId, "entry id returned by addEntry");
        }
        double writeSeconds = seconds(System.nanoTime() - writeStart);
        Check.equal(SYNC_ENTRY_COUNT - 1, handle.getLastAddConfirmed(), "writer's LAC");
        step("read back");
        double readSeconds = readAndVerify(handle, ledgerId, SYNC_ENTRY_COUNT);
        step("close");
        handle.close();

        BookKeeper reader = cluster.client(conf -> {
            if (v2) {
                Cluster.pulsarLike(conf);
            }
        });
        step("reopen");
        LedgerHandle reopened = reader.openLedger(ledgerId, digest, PASSWORD);
        Check.that(reopened.isClosed(), "reopened ledger is not closed in its metadata");
        Check.equal(SYNC_ENTRY_COUNT - 1, reopened.getLastAddConfirmed(), "LAC after reopen");
        step("read after reopen");
        double reopenReadSeconds = readAndVerify(reopened, ledgerId, SYNC_ENTRY_COUNT);
        reopened.close();
        return "entries=" + SYNC_ENTRY_COUNT + " digest=" + digest
                + String.format(" write_s=%.2f adds_per_s=%.0f", writeSeconds,
                        SYNC_ENTRY_COUNT / writeSeconds)
                + " add_latency_ms " + percentiles(latencies)
                + String.format(" read_s=%.2f reopen_read_s=%.2f", readSeconds, reopenReadSeconds);
    }

    /** 2. E3/W3/A2 over four bookies; SIGKILL a member mid-write; every ack reads back. */
    static String ensembleChange(Cluster cluster) throws Exception {
        int entryCount = 5_000;
        int killAtEntry = 1_000;
        BookKeeper client = cluster.client(conf -> { });
        LedgerHandle handle = client.createLedger(3, 3, 2, DigestType.CRC32C, PASSWORD);
        long ledgerId = handle.getId();
        List<BookieId> first = handle.getLedgerMetadata().getAllEnsembles().get(0L);
        Bookie victim = cluster.byId(first.get(0).toString());
        String spare = cluster.bookies.stream().map(Bookie::id)
                .filter(id -> first.stream().noneMatch(member -> member.toString().equals(id)))
                .findFirst().orElseThrow();

        step("async adds, SIGKILL at entry " + killAtEntry);
        Semaphore outstanding = new Semaphore(100);
        ConcurrentSkipListSet<Long> acked = new ConcurrentSkipListSet<>();
        AtomicReference<String> error = new AtomicReference<>();
        for (int index = 0; index < entryCount; index++) {
            if (index == killAtEntry) {
                victim.kill();
            }
            outstanding.acquire();
            handle.asyncAddEntry(Entries.body(ledgerId, index), (rc, lh, entryId, context) -> {
                if (rc == BKException.Code.OK) {
                    acked.add(entryId);
                } else {
                    error.compareAndSet(null,
                            "entry " + context + ": " + BKException.getMessage(rc));
                }
                outstanding.release();
            }, index);
        }
        Check.that(outstanding.tryAcquire(100, 60, TimeUnit.SECONDS), "adds still outstanding");
        Check.that(error.get() == null, "an add failed after the kill: " + error.get());
        Check.equal(entryCount, acked.size(), "acked entries");

        NavigableMap<Long, ? extends List<BookieId>> ensembles =
                handle.getLedgerMetadata().getAllEnsembles();
        List<String> last = ensembles.lastEntry().getValue().stream()
                .map(BookieId::toString).toList();
        Check.that(ensembles.size() >= 2, "no ensemble change: " + ensembles);
        Check.that(!last.contains(victim.id()), "killed bookie still in the last ensemble " + last);
        Check.that(last.contains(spare), "the fourth bookie " + spare + " is not in " + last);
        step("close after the ensemble change");
        handle.close();

        step("reopen and read with the killed bookie down");
        BookKeeper reader = cluster.client(conf -> { });
        LedgerHandle reopened = reader.openLedger(ledgerId, DigestType.CRC32C, PASSWORD);
        Check.equal(entryCount - 1, reopened.getLastAddConfirmed(), "LAC after reopen");
        double readSeconds = readAndVerify(reopened, ledgerId, entryCount);
        return "entries=" + entryCount + " killed=" + victim.id() + "@entry" + killAtEntry
                + " ensembles=" + ensembles.size() + " change_at_entry=" + ensembles.lastKey()
                + String.format(" read_s=%.2f", readSeconds);
    }

    /** 3. A second client opens with recovery: it fences, and the writer's next add fails. */
    static String recoveryFencing(Cluster cluster) throws Exception {
        int entryCount = 500;
        BookKeeper writerClient = cluster.client(conf -> { });
        LedgerHandle writer = writerClient.createLedger(1, 1, 1, DigestType.CRC32, PASSWORD);
        long ledgerId = writer.getId();
        step("writer adds");
        for (int index = 0; index < entryCount; index++) {
            writer.addEntry(Entries.body(ledgerId, index));
        }
        // The writer is abandoned here: no close, so the metadata still says OPEN.

        BookKeeper recoveryClient = cluster.client(conf -> { });
        step("openLedger with recovery");
        long recoveryStart = System.nanoTime();
        LedgerHandle recovered = recoveryClient.openLedger(ledgerId, DigestType.CRC32, PASSWORD);
        double recoveryMs = (System.nanoTime() - recoveryStart) / 1e6;
        Check.that(recovered.isClosed(), "recovery did not close the ledger");
        Check.equal(entryCount - 1, recovered.getLastAddConfirmed(), "recovered LAC");
        readAndVerify(recovered, ledgerId, entryCount);

        step("writer's add after fencing");
        int fencedCode;
        try {
            writer.addEntry(Entries.body(ledgerId, entryCount));
            throw new Check.Failure("the writer's add after fencing succeeded");
        } catch (BKException e) {
            fencedCode = e.getCode();
        }
        Check.that(fencedCode == BKException.Code.LedgerFencedException,
                "writer's add after fencing failed with " + fencedCode + " ("
                        + BKException.getMessage(fencedCode) + "), not LedgerFencedException");
        LedgerHandle again = recoveryClient.openLedgerNoRecovery(ledgerId, DigestType.CRC32,
                PASSWORD);
        Check.equal(entryCount - 1, again.getLastAddConfirmed(), "LAC in metadata after fencing");
        return "entries=" + entryCount + " recovered_lac=" + recovered.getLastAddConfirmed()
                + " writer_add_error=" + fencedCode + "(BKLedgerFencedException)"
                + String.format(" recovery_open_ms=%.1f", recoveryMs);
    }

    /** 4. DEFERRED_SYNC: what was acked before a completed force() survives SIGKILL + restart. */
    static String deferredSync(Cluster cluster) throws Exception {
        int forcedCount = 1_000;
        int unforcedCount = 1_000;
        BookKeeper writerClient = cluster.client(conf -> { });
        WriteHandle writer = writerClient.newCreateLedgerOp()
                .withEnsembleSize(1).withWriteQuorumSize(1).withAckQuorumSize(1)
                .withWriteFlags(WriteFlag.DEFERRED_SYNC)
                .withDigestType(org.apache.bookkeeper.client.api.DigestType.CRC32C)
                .withPassword(PASSWORD).execute().get();
        long ledgerId = writer.getId();
        step("DEFERRED_SYNC appends");
        long appendStart = System.nanoTime();
        for (int index = 0; index < forcedCount; index++) {
            Check.equal(index, writer.append(Entries.body(ledgerId, index)), "entry id");
        }
        double appendMs = (System.nanoTime() - appendStart) / 1e6;
        long lacBeforeForce = writer.getLastAddConfirmed();
        step("force()");
        long forceStart = System.nanoTime();
        writer.force().get(30, TimeUnit.SECONDS);
        double forceMs = (System.nanoTime() - forceStart) / 1e6;
        long forced = writer.getLastAddConfirmed();
        Check.equal(forcedCount - 1, forced, "LAC after force()");
        for (int index = forcedCount; index < forcedCount + unforcedCount; index++) {
            writer.append(Entries.body(ledgerId, index));
        }
        long pushed = writer.getLastAddPushed();

        step("SIGKILL and restart");
        Bookie bookie = cluster.bookies.get(0);
        bookie.kill();
        long restartStart = System.nanoTime();
        bookie.start();
        double restartSeconds = seconds(System.nanoTime() - restartStart);

        step("open with recovery after restart");
        BookKeeper readerClient = cluster.client(conf -> { });
        ReadHandle reader = readerClient.newOpenLedgerOp().withLedgerId(ledgerId)
                .withRecovery(true)
                .withDigestType(org.apache.bookkeeper.client.api.DigestType.CRC32C)
                .withPassword(PASSWORD).execute().get(60, TimeUnit.SECONDS);
        long recovered = reader.getLastAddConfirmed();
        Check.that(recovered >= forced, "recovered LAC " + recovered + " is below the forced LAC "
                + forced + ": acked and forced entries were lost");
        for (long first = 0; first <= recovered; first += READ_BATCH_COUNT) {
            long last = Math.min(recovered, first + READ_BATCH_COUNT - 1);
            try (LedgerEntries entries = reader.read(first, last)) {
                entries.forEach(entry ->
                        Entries.verify(ledgerId, entry.getEntryId(), entry.getEntryBytes()));
            }
        }
        long lost = pushed - recovered;
        return "forced_lac=" + forced + " lac_before_force=" + lacBeforeForce
                + " pushed=" + pushed + " recovered_lac=" + recovered
                + " unforced_survived=" + (recovered - forced) + " unforced_lost=" + lost
                + " (loss without force is allowed)"
                + String.format(" append_ms=%.0f force_ms=%.1f restart_s=%.1f", appendMs, forceMs,
                        restartSeconds);
    }

    /** 5. Explicit LAC reaches a reader; a long-poll read returns the next entry once written. */
    static String explicitLacLongPoll(Cluster cluster) throws Exception {
        int entryCount = 100;
        int explicitLacIntervalMs = 100;
        BookKeeper writerClient = cluster.client(conf ->
                conf.setExplictLacInterval(explicitLacIntervalMs));
        LedgerHandle writer = writerClient.createLedger(1, 1, 1, DigestType.CRC32, PASSWORD);
        long ledgerId = writer.getId();
        for (int index = 0; index < entryCount; index++) {
            writer.addEntry(Entries.body(ledgerId, index));
        }
        BookKeeper readerClient = cluster.client(conf -> { });
        LedgerHandle reader = readerClient.openLedgerNoRecovery(ledgerId, DigestType.CRC32,
                PASSWORD);
        step("readExplicitLastConfirmed");
        // The piggybacked LAC trails by one; only the explicit LAC can say entryCount - 1.
        long explicitLac = -1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (explicitLac < entryCount - 1 && System.nanoTime() < deadline) {
            Thread.sleep(explicitLacIntervalMs);
            explicitLac = reader.readExplicitLastConfirmed();
        }
        Check.equal(entryCount - 1, explicitLac, "explicit LAC read by a second client");
        step("readLastConfirmed");
        long piggybackLac = reader.readLastConfirmed();
        step("long poll for the next entry");

        long next = entryCount;
        long pollStart = System.nanoTime();
        CompletableFuture<LastConfirmedAndEntry> poll =
                reader.readLastAddConfirmedAndEntryAsync(next, 10_000, false);
        Thread.sleep(300);
        Check.that(!poll.isDone(), "the long poll returned before entry " + next + " was written");
        writer.addEntry(Entries.body(ledgerId, next));
        long written = System.nanoTime();
        long lastWritten = next;
        // Entry `next` carries LAC next - 1; only the writer's explicit LAC (every 100 ms) can
        // tell the bookie that `next` is confirmed. The Java bookie wakes the poll on it.
        boolean wokenByExplicitLac = true;
        LastConfirmedAndEntry answered;
        try {
            answered = poll.get(3, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            wokenByExplicitLac = false;
            step("long poll after one more add (the explicit LAC did not answer it in 3 s)");
            lastWritten = next + 1;
            writer.addEntry(Entries.body(ledgerId, lastWritten));
            answered = poll.get(15, TimeUnit.SECONDS);
        }
        double pollMs = (System.nanoTime() - pollStart) / 1e6;
        double afterWriteMs = (System.nanoTime() - written) / 1e6;
        try (LastConfirmedAndEntry result = answered) {
            Check.that(result.getLastAddConfirmed() >= next,
                    "long poll LAC " + result.getLastAddConfirmed() + " < " + next);
            Check.that(result.hasEntry(), "long poll returned LAC " + result.getLastAddConfirmed()
                    + " but no entry");
            Check.equal(next, result.getEntry().getEntryId(), "long-polled entry id");
            Entries.verify(ledgerId, next, result.getEntry().getEntryBytes());
        }
        Check.that(wokenByExplicitLac, "explicit_lac=" + explicitLac + " piggyback_lac="
                + piggybackLac + ": the long poll for entry " + next + " was not answered"
                + " within 3 s although the writer's explicit LAC (interval "
                + explicitLacIntervalMs + " ms) said " + next + "; it was answered, correctly, "
                + String.format("%.0f", afterWriteMs) + " ms after entry " + next
                + " only once entry " + lastWritten + " was added. The Java bookie answers it"
                + " on the explicit LAC, about one interval after the add");

        step("long poll for an unwritten entry, 500 ms timeout");
        long timeoutStart = System.nanoTime();
        try (LastConfirmedAndEntry idle =
                reader.readLastAddConfirmedAndEntry(lastWritten + 1, 500, false)) {
            double idleMs = (System.nanoTime() - timeoutStart) / 1e6;
            Check.that(!idle.hasEntry(), "long poll for unwritten entry " + (lastWritten + 1)
                    + " returned an entry");
            return "entries=" + (lastWritten + 1) + " explicit_lac=" + explicitLac
                    + " piggyback_lac=" + piggybackLac + " explicitLacInterval_ms="
                    + explicitLacIntervalMs
                    + String.format(" poll_total_ms=%.0f poll_after_write_ms=%.1f", pollMs,
                            afterWriteMs)
                    + " idle_poll_lac=" + idle.getLastAddConfirmed()
                    + String.format(" idle_poll_ms=%.0f", idleMs);
        }
    }

    /** Reads [0, entryCount) in batches and compares every byte; returns the seconds taken. */
    /**
     * 6. Garbage collection: 20 ledgers written one after another (so whole segments and entry
     * logs belong to one ledger: mixed ones need compaction), 18 deleted with deleteLedger;
     * the data directory shrinks by at least 80%, stays so across a SIGKILL restart, and the
     * 2 kept read back byte for byte after it.
     */
    static String gcDeleteLedgers(Cluster cluster) throws Exception {
        int ledgerCount = 20;
        int keptCount = 2;
        int entryCount = 20_000;
        BookKeeper client = cluster.client(conf -> { });
        Bookie bookie = cluster.bookies.get(0);
        long[] ids = new long[ledgerCount];
        long writeStart = System.nanoTime();
        for (int index = 0; index < ledgerCount; index++) {
            step("write ledger " + index);
            LedgerHandle handle = client.createLedger(1, 1, 1, DigestType.CRC32C, PASSWORD);
            ids[index] = handle.getId();
            addAll(handle, entryCount);
            handle.close();
        }
        double writeSeconds = seconds(System.nanoTime() - writeStart);
        Reclaim reclaim = deleteAndReclaim(cluster, client, bookie, ids, keptCount,
                entryCount, 60);
        return String.format("ledgers=%d deleted=%d entries_per_ledger=%d write_s=%.1f %s",
                ledgerCount, ledgerCount - keptCount, entryCount, writeSeconds, reclaim);
    }

    /** What deleteAndReclaim measured. */
    record Reclaim(long before, long after, double seconds, long afterRestart,
            double keptReadSeconds) {
        @Override
        public String toString() {
            return String.format("bytes_before=%d bytes_after=%d shrink_pct=%.1f reclaim_s=%.1f"
                    + " bytes_after_restart=%d kept_read_s=%.1f", before, after,
                    100.0 * (before - after) / before, seconds, afterRestart, keptReadSeconds);
        }
    }

    /**
     * Deletes all but the first `keptCount` of `ids`; checks that the bookie's data directory
     * shrinks by at least 80% within `deadlineSeconds` and stays so across a SIGKILL restart,
     * after which the kept ledgers must read back byte for byte.
     */
    static Reclaim deleteAndReclaim(Cluster cluster, BookKeeper client, Bookie bookie,
            long[] ids, int keptCount, int entryCount, int deadlineSeconds) throws Exception {
        // The Java bookie writes its entry logs at its flush (flushInterval): wait for them.
        step("wait for the data on disk");
        long before = bytesSettled(bookie.dataDirectory());
        step("deleteLedger x" + (ids.length - keptCount));
        for (int index = keptCount; index < ids.length; index++) {
            client.deleteLedger(ids[index]);
        }
        long deleted = System.nanoTime();
        step("wait for the data directory to shrink by 80%");
        long after = directoryBytes(bookie.dataDirectory());
        long deadline = deleted + TimeUnit.SECONDS.toNanos(deadlineSeconds);
        while (after * 5 > before && System.nanoTime() < deadline) {
            Thread.sleep(200);
            after = directoryBytes(bookie.dataDirectory());
        }
        double reclaimSeconds = seconds(System.nanoTime() - deleted);
        Check.that(after * 5 <= before, "the data directory went from " + before + " to "
                + after + " bytes in " + reclaimSeconds + " s, not down by 80%");
        // Reported: where it ends up, not just where it crossed 80%.
        after = bytesSettled(bookie.dataDirectory());
        // Deletions survive a crash: nothing comes back, and the kept ledgers are whole.
        step("SIGKILL and restart");
        bookie.kill();
        bookie.start();
        long restarted = directoryBytes(bookie.dataDirectory());
        Check.that(restarted * 5 <= before, "after a SIGKILL restart the data directory holds "
                + restarted + " bytes of the " + before + " before the deletions");
        step("read the kept ledgers back after the restart");
        BookKeeper reader = cluster.client(conf -> { });
        double readSeconds = 0;
        for (int index = 0; index < keptCount; index++) {
            LedgerHandle kept = reader.openLedger(ids[index], DigestType.CRC32C, PASSWORD);
            readSeconds += readAndVerify(kept, ids[index], entryCount);
            kept.close();
        }
        return new Reclaim(before, after, reclaimSeconds, restarted, readSeconds);
    }

    /**
     * 7. Compaction: 20 ledgers written at once (every segment and entry log holds all 20),
     * 2 GB in all (-Dquick: about 100 MB), 18 deleted: the data directory shrinks by at least
     * 80% (only compaction can do it: no segment is wholly dead), stays so across a SIGKILL
     * restart, and the 2 kept ledgers read back byte for byte after it.
     */
    static String gcCompactInterleaved(Cluster cluster, boolean quick) throws Exception {
        int ledgerCount = 20;
        int keptCount = 2;
        // Entry bodies average about 520 bytes (Entries.body).
        int entryCount = quick ? 15_000 : 200_000;
        BookKeeper client = cluster.client(conf -> { });
        Bookie bookie = cluster.bookies.get(0);
        LedgerHandle[] handles = new LedgerHandle[ledgerCount];
        long[] ids = new long[ledgerCount];
        for (int index = 0; index < ledgerCount; index++) {
            handles[index] = client.createLedger(1, 1, 1, DigestType.CRC32C, PASSWORD);
            ids[index] = handles[index].getId();
        }
        step("write " + ledgerCount + " ledgers interleaved");
        long writeStart = System.nanoTime();
        addAllInterleaved(handles, entryCount);
        double writeSeconds = seconds(System.nanoTime() - writeStart);
        for (LedgerHandle handle : handles) {
            handle.close();
        }
        Reclaim reclaim = deleteAndReclaim(cluster, client, bookie, ids, keptCount,
                entryCount, 180);
        return String.format("ledgers=%d deleted=%d entries_per_ledger=%d write_s=%.1f %s",
                ledgerCount, ledgerCount - keptCount, entryCount, writeSeconds, reclaim);
    }

    /** Adds entries 0..count-1 to every handle in turn, up to 1,000 outstanding in all. */
    static void addAllInterleaved(LedgerHandle[] handles, int count) throws Exception {
        Semaphore outstanding = new Semaphore(1_000);
        AtomicReference<String> error = new AtomicReference<>();
        for (int index = 0; index < count; index++) {
            for (LedgerHandle handle : handles) {
                outstanding.acquire();
                handle.asyncAddEntry(Entries.body(handle.getId(), index),
                        (rc, lh, entryId, ctx) -> {
                            if (rc != BKException.Code.OK) {
                                error.compareAndSet(null, "ledger " + lh.getId() + " entry "
                                        + ctx + ": " + BKException.getMessage(rc));
                            }
                            outstanding.release();
                        }, index);
            }
        }
        Check.that(outstanding.tryAcquire(1_000, 120, TimeUnit.SECONDS), "adds still outstanding");
        Check.that(error.get() == null, "an add failed: " + error.get());
    }

    /** Adds entries 0..count-1 with up to 1,000 outstanding; fails on any error. */
    static void addAll(LedgerHandle handle, int count) throws Exception {
        Semaphore outstanding = new Semaphore(1_000);
        AtomicReference<String> error = new AtomicReference<>();
        for (int index = 0; index < count; index++) {
            outstanding.acquire();
            handle.asyncAddEntry(Entries.body(handle.getId(), index), (rc, lh, entryId, ctx) -> {
                if (rc != BKException.Code.OK) {
                    error.compareAndSet(null, "entry " + ctx + ": " + BKException.getMessage(rc));
                }
                outstanding.release();
            }, index);
        }
        Check.that(outstanding.tryAcquire(1_000, 60, TimeUnit.SECONDS), "adds still outstanding");
        Check.that(error.get() == null, "an add failed: " + error.get());
    }

    /** The directory's bytes once they stop changing for 3 s (at most 30 s). */
    static long bytesSettled(Path directory) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long last = directoryBytes(directory);
        while (System.nanoTime() < deadline) {
            Thread.sleep(3_000);
            long now = directoryBytes(directory);
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }

    /** Bytes of the regular files under `directory`; files removed meanwhile count 0. */
    static long directoryBytes(Path directory) throws IOException {
        long total = 0;
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : (Iterable<Path>) paths::iterator) {
                try {
                    if (Files.isRegularFile(path)) {
                        total += Files.size(path);
                    }
                } catch (NoSuchFileException e) {
                    // Removed by the collector while we walked.
                }
            }
        } catch (UncheckedIOException e) {
            if (!(e.getCause() instanceof NoSuchFileException)) {
                throw e;
            }
        }
        return total;
    }

    static double readAndVerify(LedgerHandle handle, long ledgerId, int entryCount)
            throws Exception {
        long start = System.nanoTime();
        long expected = 0;
        for (long first = 0; first < entryCount; first += READ_BATCH_COUNT) {
            long last = Math.min(entryCount - 1, first + READ_BATCH_COUNT - 1);
            Enumeration<LedgerEntry> entries = handle.readEntries(first, last);
            while (entries.hasMoreElements()) {
                LedgerEntry entry = entries.nextElement();
                Check.equal(expected, entry.getEntryId(), "entry id in read order");
                Entries.verify(ledgerId, entry.getEntryId(), entry.getEntry());
                expected += 1;
            }
        }
        Check.equal(entryCount, expected, "entries read back");
        return seconds(System.nanoTime() - start);
    }

    static String percentiles(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return String.format("p50=%.3f p99=%.3f max=%.3f",
                sorted[sorted.length / 2] / 1e6,
                sorted[(int) (sorted.length * 0.99)] / 1e6,
                sorted[sorted.length - 1] / 1e6);
    }

    static double seconds(long nanos) {
        return nanos / 1e9;
    }
}
