package ringlog.interop;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ServerConfiguration;

/**
 * disk-churn (issue 33 item 3, "a bookie with reclaimable space must not turn read-only"): one
 * bookie whose data directory is on a small file system of its own (scripts/disk_pressure.sh
 * mounts a 3 GiB ext4). The real client writes two streams interleaved entry by entry, E1/W1/A1,
 * 4 KiB entries, 32 MiB ledgers: short-lived ledgers, deleted as soon as each is closed, and
 * long-lived ones of which only the newest KEPT are kept (about half the file system), so every
 * segment or entry log ends up about half live and space comes back only by compaction. TOTAL
 * bytes (10 GiB) must be acknowledged with no add refused and the bookie never read-only; the
 * kept ledgers must then read back byte for byte, before and after a SIGKILL and restart.
 * Measured: peak file-system use, the bookie's write amplification (/proc/PID/io write_bytes
 * over acknowledged bytes), acknowledged MiB/s per second and the seconds below half the median.
 */
final class DiskChurn {
    static final int ENTRY_SIZE = 4096;
    static final int ENTRIES_PER_LEDGER = 8192;
    static final long LEDGER_BYTES = (long) ENTRY_SIZE * ENTRIES_PER_LEDGER;
    static final long MIB = 1 << 20;
    static final long GIB = 1 << 30;
    static final int READ_BATCH_COUNT = 256;
    /** ringlog flags here (issue 33); the rest default, plus -Ddiskchurn.ringlog.args. */
    static final Map<String, String> RINGLOG_FLAGS = Map.of("--gc-interval-ms", "2000",
            "--segment-size", "67108864");
    /** Java bookie: deletions seen at ringlog's pace (gcWaitTime, default 900000 ms). */
    static final Map<String, String> JAVA_DEFAULTS = Map.of("gcWaitTime", "2000");
    /** Java bookie tuned as in issue 33: transactional minor compaction at 0.6 every 2 s. */
    static final Map<String, String> JAVA_TUNED = Map.of("gcWaitTime", "2000",
            "useTransactionalCompaction", "true", "minorCompactionThreshold", "0.6",
            "minorCompactionInterval", "2");

    private DiskChurn() {}

    /** Everything -Ddiskchurn.* says, read once. */
    record Config(Path dir, long totalBytes, int kept, double keptFraction, int outstanding,
            double rateMib, boolean javaTuned, boolean javaJournalOnFs, List<String> ringlogArgs,
            Path json, double waMax, int timeoutSeconds) {

        static Config fromSystemProperties() {
            String dir = System.getProperty("diskchurn.dir", "");
            double totalGib = Double.parseDouble(System.getProperty("diskchurn.total.gib", "10"));
            long total = (long) (totalGib * GIB) / (2 * ENTRY_SIZE) * (2 * ENTRY_SIZE);
            String pace = System.getProperty("diskchurn.pace", "full").trim();
            double rate = pace.equals("full") ? 0 : Double.parseDouble(pace);
            Check.that(rate >= 0, "-Ddiskchurn.pace must be full or MiB/s, not " + pace);
            String args = System.getProperty("diskchurn.ringlog.args", "").trim();
            List<String> ringlogArgs = args.isEmpty() ? List.of() : List.of(args.split("\\s+"));
            Check.that(ringlogArgs.size() % 2 == 0, "-Ddiskchurn.ringlog.args must be pairs of"
                    + " --flag value, not: " + args);
            String json = System.getProperty("diskchurn.json", "");
            // Room for the slowest bookie seen here (about 20 MiB/s) plus read-back and restart.
            int timeout = Integer.parseInt(System.getProperty("diskchurn.timeout.s",
                    Long.toString(600 + total / MIB / 10)));
            return new Config(dir.isBlank() ? null : Path.of(dir).toAbsolutePath(), total,
                    Integer.parseInt(System.getProperty("diskchurn.kept", "0")),
                    Double.parseDouble(System.getProperty("diskchurn.kept.fraction", "0.5")),
                    Integer.parseInt(System.getProperty("diskchurn.outstanding", "500")), rate,
                    Boolean.parseBoolean(System.getProperty("diskchurn.java.tuned", "false")),
                    Boolean.parseBoolean(System.getProperty("diskchurn.java.journal.on.fs",
                            "false")),
                    ringlogArgs, json.isBlank() ? null : Path.of(json).toAbsolutePath(),
                    Double.parseDouble(System.getProperty("diskchurn.wa.max", "0")), timeout);
        }

        String pace() {
            return rateMib > 0 ? String.format(Locale.ROOT, "%.0fMiBps", rateMib) : "full";
        }

        /** The bookie's settings for Cluster.newBookie: ringlog flags and Java conf keys. */
        Map<String, String> settings() {
            Map<String, String> settings = new LinkedHashMap<>();
            settings.put("--data-dir", dir.resolve("data").toString());
            settings.putAll(RINGLOG_FLAGS);
            for (int index = 0; index < ringlogArgs.size(); index += 2) {
                settings.put(ringlogArgs.get(index), ringlogArgs.get(index + 1));
            }
            settings.put("ledgerDirectories", dir.resolve("ledgers").toString());
            if (javaJournalOnFs) {
                settings.put("journalDirectories", dir.resolve("journal").toString());
            }
            settings.putAll(javaTuned ? JAVA_TUNED : JAVA_DEFAULTS);
            return settings;
        }
    }

    /** One ledger of a stream: its handle and a latch that reaches 0 when every add came back. */
    private static final class Ledger {
        final LedgerHandle handle;
        final boolean kept;
        final CountDownLatch done = new CountDownLatch(ENTRIES_PER_LEDGER);
        final AtomicLong failed = new AtomicLong();
        int submitted;

        Ledger(LedgerHandle handle, boolean kept) {
            this.handle = handle;
            this.kept = kept;
        }

        /** No more adds: the entries never submitted count as done. */
        void seal() {
            for (int index = submitted; index < ENTRIES_PER_LEDGER; index++) {
                done.countDown();
            }
        }
    }

    /** What the file system, ZooKeeper and the acks did, sampled every 100 ms. */
    private static final class Sampler implements Runnable {
        final FileStore store;
        final Cluster cluster;
        final String id;
        final AtomicLong acked;
        final long start;
        final List<long[]> perSecond = new ArrayList<>(); // {acked bytes, peak used, read-only}
        volatile long peakUsed;
        volatile boolean readOnlySeen;
        volatile double readOnlyFirstSeconds = -1;
        volatile long readOnlyAckedBytes = -1;
        volatile String error;
        private volatile boolean stopped;
        private volatile boolean seriesEnded;

        Sampler(FileStore store, Cluster cluster, String id, AtomicLong acked, long start) {
            this.store = store;
            this.cluster = cluster;
            this.id = id;
            this.acked = acked;
            this.start = start;
        }

        @Override
        public void run() {
            long second = 1;
            long ackedAtSecond = 0;
            long peakInSecond = 0;
            int readOnlyInSecond = 0;
            while (!stopped) {
                try {
                    long used = store.getTotalSpace() - store.getUnallocatedSpace();
                    peakUsed = Math.max(peakUsed, used);
                    peakInSecond = Math.max(peakInSecond, used);
                    if (cluster.zk.readOnlyRegistration(id) != null) {
                        readOnlyInSecond = 1;
                        if (!readOnlySeen) {
                            readOnlySeen = true;
                            readOnlyFirstSeconds = Scenarios.seconds(System.nanoTime() - start);
                            readOnlyAckedBytes = acked.get();
                        }
                    }
                    long now = System.nanoTime();
                    if (!seriesEnded && now - start >= second * 1_000_000_000L) {
                        long bytes = acked.get();
                        synchronized (perSecond) {
                            perSecond.add(new long[] {bytes - ackedAtSecond, peakInSecond,
                                    readOnlyInSecond});
                        }
                        ackedAtSecond = bytes;
                        peakInSecond = 0;
                        readOnlyInSecond = 0;
                        second += 1;
                    }
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    error = e.toString();
                }
            }
        }

        /** The write phase ended: no more per-second samples (read-only is still watched). */
        void endSeries() {
            seriesEnded = true;
        }

        void stop() {
            stopped = true;
        }

        List<long[]> seconds() {
            synchronized (perSecond) {
                return new ArrayList<>(perSecond);
            }
        }
    }

    static String run(Cluster cluster, Config config) throws Exception {
        Bookie bookie = cluster.bookies.get(0);
        String bookieKind = bookie instanceof JavaBookie
                ? (config.javaTuned() ? "java-tuned" : "java") : "ringlog";
        FileStore store = Files.getFileStore(config.dir());
        long fsTotal = store.getTotalSpace();
        int kept = config.kept() > 0 ? config.kept()
                : (int) Math.floor(config.keptFraction() * fsTotal / LEDGER_BYTES);
        Check.that(kept >= 1, "the file system (" + fsTotal / MIB + " MiB) holds no kept ledger");
        long usedStart = fsTotal - store.getUnallocatedSpace();
        String device = store.name();
        Path lifetime = Path.of("/sys/fs/ext4", device.replaceFirst("^/dev/", ""),
                "lifetime_write_kbytes");
        long fsWrittenStart = readLong(lifetime);
        printSettings(bookie, config, bookieKind, fsTotal, kept, device);

        BookKeeper client = cluster.client(conf -> {
            // The default throttle (5000 adds/s per ledger handle) would cap two open ledgers of
            // 4 KiB entries at 39 MiB/s: this scenario's pace is the semaphore or the rate.
            conf.setThrottleValue(0);
        });
        Result result = new Result();
        result.kept = kept;
        long pid = bookie.pid();
        long writeBytesStart = ioWriteBytes(pid);
        AtomicLong acked = new AtomicLong();
        AtomicLong addsFailed = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        Deque<Long> keptIds = new ArrayDeque<>();
        AtomicLong deletes = new AtomicLong();

        Scenarios.step("write " + config.totalBytes() / MIB + " MiB in two interleaved streams");
        long start = System.nanoTime();
        // Writes stop here if they have not finished: read-back and restart get the rest.
        long writeDeadline = start + TimeUnit.SECONDS.toNanos(
                Math.max(60, config.timeoutSeconds() - 420));
        Sampler sampler = new Sampler(store, cluster, bookie.id(), acked, start);
        Thread samplerThread = new Thread(sampler, "disk-churn-sampler");
        samplerThread.setDaemon(true);
        samplerThread.start();
        ExecutorService closer = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "disk-churn-closer");
            thread.setDaemon(true);
            return thread;
        });
        Semaphore outstanding = new Semaphore(config.outstanding());
        Ledger[] current = new Ledger[2]; // 0: short-lived, 1: long-lived
        long entryCount = config.totalBytes() / ENTRY_SIZE;
        double nanosPerEntry = config.rateMib() > 0 ? 1e9 * ENTRY_SIZE / (config.rateMib() * MIB)
                : 0;
        long paceBase = start;
        long paceIndex = 0;
        String stopReason = null;
        long submitted = 0;
        try {
            for (long index = 0; index < entryCount; index++) {
                if (firstError.get() != null) {
                    stopReason = "first error";
                    break;
                }
                if (System.nanoTime() > writeDeadline) {
                    stopReason = "write deadline";
                    firstError.compareAndSet(null, "writes not done after "
                            + Scenarios.seconds(writeDeadline - start) + " s");
                    break;
                }
                int stream = (int) (index % 2);
                Ledger ledger = current[stream];
                if (ledger == null || ledger.submitted == ENTRIES_PER_LEDGER) {
                    if (ledger != null) {
                        handOver(closer, client, ledger, kept, keptIds, deletes, firstError);
                        current[stream] = null;
                    }
                    try {
                        ledger = new Ledger(client.createLedger(1, 1, 1, DigestType.CRC32C,
                                Scenarios.PASSWORD), stream == 1);
                    } catch (BKException e) {
                        firstError.compareAndSet(null, "createLedger: " + e.getMessage());
                        stopReason = "first error";
                        break;
                    }
                    current[stream] = ledger;
                }
                if (nanosPerEntry > 0) {
                    long due = paceBase + (long) ((index - paceIndex) * nanosPerEntry);
                    long now = System.nanoTime();
                    if (now - due > 1_000_000_000L) {
                        // More than 1 s behind: start the schedule again, no catch-up burst.
                        paceBase = now;
                        paceIndex = index;
                    } else if (due > now) {
                        LockSupport.parkNanos(due - now);
                    }
                }
                if (!outstanding.tryAcquire(60, TimeUnit.SECONDS)) {
                    firstError.compareAndSet(null, "no add came back for 60 s ("
                            + config.outstanding() + " outstanding)");
                    stopReason = "stalled";
                    break;
                }
                int entry = ledger.submitted++;
                Ledger target = ledger;
                byte[] body = Entries.body(target.handle.getId(), entry, ENTRY_SIZE, ENTRY_SIZE);
                submitted += 1;
                target.handle.asyncAddEntry(body, (rc, lh, entryId, ctx) -> {
                    if (rc == BKException.Code.OK) {
                        acked.addAndGet(ENTRY_SIZE);
                    } else {
                        addsFailed.incrementAndGet();
                        target.failed.incrementAndGet();
                        firstError.compareAndSet(null, String.format(Locale.ROOT,
                                "ledger %d entry %d after %d MiB acked: %s (%d)",
                                lh.getId(), (Integer) ctx, acked.get() / MIB,
                                BKException.getMessage(rc), rc));
                    }
                    target.done.countDown();
                    outstanding.release();
                }, entry);
            }
            Scenarios.step("drain the outstanding adds");
            for (Ledger ledger : current) {
                if (ledger != null) {
                    handOver(closer, client, ledger, kept, keptIds, deletes, firstError);
                }
            }
            if (!outstanding.tryAcquire(config.outstanding(), 120, TimeUnit.SECONDS)) {
                firstError.compareAndSet(null, "adds still outstanding 120 s after the last");
            }
        } finally {
            closer.shutdown();
            if (!closer.awaitTermination(180, TimeUnit.SECONDS)) {
                firstError.compareAndSet(null, "ledgers not closed/deleted 180 s after the last"
                        + " add");
                closer.shutdownNow();
            }
        }
        long end = System.nanoTime();
        long writeBytesEnd = ioWriteBytes(pid);
        long fsWrittenEnd = readLong(lifetime);
        sampler.endSeries();
        List<long[]> perSecond = sampler.seconds();

        result.bookie = bookieKind;
        result.pace = config.pace();
        result.fsMib = fsTotal / MIB;
        result.totalBytesWanted = config.totalBytes();
        result.acked = acked.get();
        result.submitted = submitted;
        result.addsFailed = addsFailed.get();
        result.firstError = firstError.get();
        result.stopReason = stopReason;
        result.seconds = Scenarios.seconds(end - start);
        result.usedStart = usedStart;
        result.fsTotal = fsTotal;
        result.writeBytes = writeBytesStart >= 0 && writeBytesEnd >= 0
                ? writeBytesEnd - writeBytesStart : -1;
        result.fsWritten = fsWrittenStart >= 0 && fsWrittenEnd >= 0
                ? (fsWrittenEnd - fsWrittenStart) * 1024 : -1;
        result.perSecond = perSecond;
        result.deletes = deletes.get();
        result.samplerError = sampler.error;
        List<Long> keptList;
        synchronized (keptIds) {
            keptList = new ArrayList<>(keptIds);
        }
        result.keptLedgers = keptList.size();

        if (bookie instanceof RinglogBookie) {
            result.metrics = scrapeMetrics(bookie);
            for (String line : result.metrics) {
                System.out.println("# metrics: " + line);
            }
        }
        printBookieMoves(bookie);

        Scenarios.step("read back " + keptList.size() + " kept ledgers");
        try {
            result.entriesVerified = verifyAll(cluster.client(conf -> { }), keptList);
        } catch (Exception e) {
            result.verifyError = "before restart: " + describe(e);
        }
        // Read-only and peak use are watched until the kill: a move to read-only that follows
        // the refused adds, or compaction after the last add, still counts.
        sampler.stop();
        samplerThread.join(5_000);
        result.peakUsed = sampler.peakUsed;
        result.readOnlySeen = sampler.readOnlySeen;
        result.readOnlyFirstSeconds = sampler.readOnlyFirstSeconds;
        result.readOnlyAckedBytes = sampler.readOnlyAckedBytes;
        Scenarios.step("SIGKILL the bookie and restart it");
        long killed = System.nanoTime();
        try {
            bookie.kill();
            bookie.start(true);
            result.restartSeconds = Scenarios.seconds(System.nanoTime() - killed);
            result.restartedReadOnly = cluster.zk.registration(bookie.id()) == null;
            Scenarios.step("read back " + keptList.size() + " kept ledgers after the restart");
            result.entriesVerifiedAfterRestart = verifyAll(cluster.client(conf -> { }),
                    keptList);
        } catch (Exception e) {
            if (result.verifyError == null) {
                result.verifyError = "after restart: " + describe(e);
            }
        }

        String line = result.line(config.waMax());
        if (config.json() != null) {
            Files.writeString(config.json(), result.json(config), StandardCharsets.UTF_8);
        }
        List<String> failures = result.failures(config.waMax());
        if (!failures.isEmpty()) {
            throw new Check.Failure(line + " failed=\"" + String.join("; ", failures) + "\"");
        }
        return line;
    }

    /** Closes a ledger once every add came back, then deletes it or keeps it (newest KEPT). */
    private static void handOver(ExecutorService closer, BookKeeper client, Ledger ledger,
            int kept, Deque<Long> keptIds, AtomicLong deletes,
            AtomicReference<String> firstError) {
        ledger.seal();
        closer.submit(() -> {
            long id = ledger.handle.getId();
            try {
                if (!ledger.done.await(120, TimeUnit.SECONDS)) {
                    firstError.compareAndSet(null, "ledger " + id + ": adds still outstanding"
                            + " 120 s after its last");
                    return null;
                }
                ledger.handle.closeAsync().get(60, TimeUnit.SECONDS);
                if (!ledger.kept) {
                    client.deleteLedger(id);
                    deletes.incrementAndGet();
                    return null;
                }
                if (ledger.failed.get() > 0 || ledger.submitted < ENTRIES_PER_LEDGER) {
                    // Incomplete (an add failed, or the run stopped): not one to verify.
                    return null;
                }
                List<Long> drop = new ArrayList<>();
                synchronized (keptIds) {
                    keptIds.addLast(id);
                    while (keptIds.size() > kept) {
                        drop.add(keptIds.removeFirst());
                    }
                }
                for (long old : drop) {
                    client.deleteLedger(old);
                    deletes.incrementAndGet();
                }
            } catch (Exception e) {
                firstError.compareAndSet(null, "close/delete of ledger " + id + ": "
                        + describe(e));
            }
            return null;
        });
    }

    /** Every kept ledger read back and compared byte for byte, four at a time; entries read. */
    private static long verifyAll(BookKeeper reader, List<Long> ids) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Long>> counts = new ArrayList<>();
            for (long id : ids) {
                counts.add(pool.submit(() -> {
                    LedgerHandle handle = reader.openLedger(id, DigestType.CRC32C,
                            Scenarios.PASSWORD);
                    try {
                        return verify(handle, id);
                    } finally {
                        handle.close();
                    }
                }));
            }
            long total = 0;
            for (Future<Long> count : counts) {
                total += count.get(600, TimeUnit.SECONDS);
            }
            return total;
        } finally {
            pool.shutdownNow();
        }
    }

    private static long verify(LedgerHandle handle, long ledger) throws Exception {
        Check.equal(ENTRIES_PER_LEDGER - 1, handle.getLastAddConfirmed(),
                "last entry of kept ledger " + ledger);
        long expected = 0;
        for (long first = 0; first < ENTRIES_PER_LEDGER; first += READ_BATCH_COUNT) {
            Enumeration<LedgerEntry> entries = handle.readEntries(first,
                    Math.min(ENTRIES_PER_LEDGER - 1, first + READ_BATCH_COUNT - 1));
            while (entries.hasMoreElements()) {
                LedgerEntry entry = entries.nextElement();
                Check.equal(expected, entry.getEntryId(), "entry id in read order");
                Entries.verify(ledger, entry.getEntryId(), entry.getEntry(), ENTRY_SIZE,
                        ENTRY_SIZE);
                expected += 1;
            }
        }
        Check.equal(ENTRIES_PER_LEDGER, expected, "entries read back from ledger " + ledger);
        return expected;
    }

    /** The scenario's settings, and for the Java bookie the effective compaction keys. */
    private static void printSettings(Bookie bookie, Config config, String kind, long fsTotal,
            int kept, String device) throws Exception {
        System.out.printf(Locale.ROOT, "# disk-churn: bookie=%s pace=%s outstanding=%d"
                + " total_mib=%d fs=%s fs_mib=%d kept=%d (%d MiB live at most) dir=%s%n", kind,
                config.pace(), config.outstanding(), config.totalBytes() / MIB, device,
                fsTotal / MIB, kept, kept * LEDGER_BYTES / MIB, config.dir());
        if (bookie instanceof JavaBookie java) {
            ServerConfiguration conf = new ServerConfiguration();
            conf.loadConf(java.conf().toUri().toURL());
            System.out.println("# java bookie: ledgerDirectories=" + conf.getLedgerDirNames()[0]
                    + " journalDirectories=" + conf.getJournalDirNames()[0]
                    + " ledgerStorageClass=" + conf.getLedgerStorageClass()
                    + " gcWaitTime=" + conf.getGcWaitTime()
                    + " useTransactionalCompaction=" + conf.getUseTransactionalCompaction()
                    + " minorCompactionThreshold=" + conf.getMinorCompactionThreshold()
                    + " minorCompactionInterval=" + conf.getMinorCompactionInterval()
                    + " majorCompactionThreshold=" + conf.getMajorCompactionThreshold()
                    + " majorCompactionInterval=" + conf.getMajorCompactionInterval()
                    + " compactionRateByEntries=" + conf.getCompactionRateByEntries()
                    + " isForceGCAllowWhenNoSpace=" + conf.getIsForceGCAllowWhenNoSpace()
                    + " diskUsageThreshold=" + conf.getDiskUsageThreshold()
                    + " diskUsageWarnThreshold=" + conf.getDiskUsageWarnThreshold()
                    + " logSizeLimit=" + conf.getEntryLogSizeLimit()
                    + " journalMaxSizeMB=" + conf.getMaxJournalSizeMB()
                    + " journalMaxBackups=" + conf.getMaxBackupJournals());
        } else {
            System.out.println("# ringlog flags: " + String.join(" ", bookie.command()
                    .subList(2, bookie.command().size())));
        }
    }

    /** /proc/PID/io write_bytes: what the process had the block layer write; -1 if unreadable. */
    static long ioWriteBytes(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "io"))) {
                if (line.startsWith("write_bytes:")) {
                    return Long.parseLong(line.substring("write_bytes:".length()).trim());
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux, or not allowed: reported as -1.
        }
        return -1;
    }

    private static long readLong(Path file) {
        try {
            return Long.parseLong(Files.readString(file).trim());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** ringlog's /metrics lines about throttling, compaction and read-only; [] if none. */
    private static List<String> scrapeMetrics(Bookie bookie) {
        List<String> lines = new ArrayList<>();
        String address = null;
        try {
            for (String line : Files.readAllLines(bookie.log(), StandardCharsets.UTF_8)) {
                int at = line.indexOf("ringlog http on ");
                if (at >= 0) {
                    address = line.substring(at + "ringlog http on ".length()).trim();
                }
            }
            if (address == null) {
                lines.add("(no \"ringlog http on\" line in the bookie log: metrics not scraped)");
                return lines;
            }
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
                    .build();
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(
                    URI.create("http://" + address + "/metrics"))
                    .timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            for (String line : response.body().split("\n")) {
                String lower = line.toLowerCase(Locale.ROOT);
                if (!line.startsWith("#") && (lower.contains("throttl")
                        || lower.contains("compaction") || lower.contains("read_only")
                        || lower.contains("space_wait") || lower.contains("rounds_forced")
                        || lower.contains("zero_ahead") || lower.contains("recycled")
                        || lower.contains("journal_write_bytes"))) {
                    lines.add(line);
                }
            }
        } catch (Exception e) {
            lines.add("(metrics from " + address + " failed: " + e + ")");
        }
        return lines;
    }

    /** The bookie's own account of read-only moves (ringlog's log lines), at most 20. */
    private static void printBookieMoves(Bookie bookie) {
        try {
            int printed = 0;
            for (String line : Files.readAllLines(bookie.log(), StandardCharsets.UTF_8)) {
                String lower = line.toLowerCase(Locale.ROOT);
                if ((lower.contains("read-only") || lower.contains("readonly")
                        || lower.contains("writable again")) && printed < 20) {
                    System.out.println("# bookie: " + line);
                    printed += 1;
                }
            }
        } catch (IOException e) {
            System.out.println("# bookie log unreadable: " + e);
        }
    }

    private static String describe(Throwable error) {
        while (error.getCause() != null && !(error instanceof Check.Failure)
                && !(error instanceof BKException)) {
            error = error.getCause();
        }
        return String.valueOf(error).replace('\n', ' ').replace('"', '\'');
    }

    /** The numbers of one run, its PASS/FAIL line and its JSON. */
    private static final class Result {
        String bookie;
        String pace;
        long fsMib;
        long fsTotal;
        long totalBytesWanted;
        long acked;
        long submitted;
        long addsFailed;
        String firstError;
        String stopReason;
        double seconds;
        long usedStart;
        long peakUsed;
        long writeBytes;
        long fsWritten;
        List<long[]> perSecond = List.of();
        boolean readOnlySeen;
        double readOnlyFirstSeconds;
        long readOnlyAckedBytes;
        long deletes;
        String samplerError;
        int kept;
        int keptLedgers;
        long entriesVerified;
        long entriesVerifiedAfterRestart;
        double restartSeconds = -1;
        boolean restartedReadOnly;
        String verifyError;
        List<String> metrics = List.of();

        double mibPerSecond() {
            return seconds > 0 ? acked / (double) MIB / seconds : 0;
        }

        double wa() {
            return writeBytes >= 0 && acked > 0 ? writeBytes / (double) acked : -1;
        }

        double fsWa() {
            return fsWritten >= 0 && acked > 0 ? fsWritten / (double) acked : -1;
        }

        /** Acknowledged MiB/s in each whole second of the write phase. */
        double[] mibPerSecondSeries() {
            return perSecond.stream().mapToDouble(sample -> sample[0] / (double) MIB).toArray();
        }

        double medianMibPerSecond() {
            double[] sorted = mibPerSecondSeries();
            if (sorted.length == 0) {
                return 0;
            }
            Arrays.sort(sorted);
            return sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
        }

        /** Seconds in which acknowledged throughput fell below half the median second's. */
        long slowedSeconds() {
            double half = medianMibPerSecond() / 2;
            return Arrays.stream(mibPerSecondSeries()).filter(mib -> mib < half).count();
        }

        List<String> failures(double waMax) {
            List<String> failures = new ArrayList<>();
            if (addsFailed > 0) {
                failures.add(addsFailed + " adds failed");
            }
            if (acked < totalBytesWanted) {
                failures.add("acked " + acked + " of " + totalBytesWanted + " bytes"
                        + (stopReason != null ? " (stopped: " + stopReason + ")" : ""));
            }
            if (firstError != null && addsFailed == 0) {
                failures.add(firstError);
            }
            if (readOnlySeen) {
                failures.add(String.format(Locale.ROOT, "read-only in ZooKeeper %.1f s in,"
                        + " after %d MiB acked", readOnlyFirstSeconds, readOnlyAckedBytes / MIB));
            }
            if (verifyError != null) {
                failures.add("read-back: " + verifyError);
            }
            long wanted = (long) keptLedgers * ENTRIES_PER_LEDGER;
            if (verifyError == null && (entriesVerified != wanted
                    || entriesVerifiedAfterRestart != wanted)) {
                failures.add("entries verified " + entriesVerified + "/"
                        + entriesVerifiedAfterRestart + " of " + wanted);
            }
            if (waMax > 0 && wa() > waMax) {
                failures.add(String.format(Locale.ROOT, "wa %.2f above %.2f", wa(), waMax));
            }
            return failures;
        }

        String line(double waMax) {
            return String.format(Locale.ROOT, "bookie=%s pace=%s fs_mib=%d total_bytes_acked=%d"
                    + " total_bytes_wanted=%d adds_failed=%d first_error=\"%s\" seconds=%.1f"
                    + " mib_per_s=%.1f peak_used_mib=%d peak_used_fraction=%.3f wa=%.2f"
                    + " fs_wa=%.2f slowed_seconds=%d median_mib_per_s=%.1f kept=%d"
                    + " kept_ledgers=%d entries_verified=%d entries_verified_after_restart=%d"
                    + " restart_s=%.1f restarted_readonly=%s readonly_seen=%s readonly_first_s=%.1f"
                    + " readonly_at_acked_mib=%d deleted_ledgers=%d",
                    bookie, pace, fsMib, acked, totalBytesWanted, addsFailed,
                    firstError == null ? "" : firstError.replace('"', '\''), seconds,
                    mibPerSecond(), peakUsed / MIB, peakUsed / (double) fsTotal, wa(), fsWa(),
                    slowedSeconds(), medianMibPerSecond(), kept, keptLedgers, entriesVerified,
                    entriesVerifiedAfterRestart, restartSeconds, restartedReadOnly, readOnlySeen,
                    readOnlyFirstSeconds, readOnlyAckedBytes < 0 ? -1 : readOnlyAckedBytes / MIB,
                    deletes);
        }

        String json(Config config) {
            StringBuilder out = new StringBuilder("{\n");
            List<String> failures = failures(config.waMax());
            field(out, "scenario", "disk-churn");
            field(out, "pass", failures.isEmpty());
            field(out, "failures", failures);
            field(out, "bookie", bookie);
            field(out, "pace", pace);
            field(out, "rate_mib_per_s", config.rateMib());
            field(out, "outstanding", config.outstanding());
            field(out, "ringlog_args", config.ringlogArgs());
            field(out, "java_tuned", config.javaTuned());
            field(out, "java_journal_on_fs", config.javaJournalOnFs());
            field(out, "fs_mib", fsMib);
            field(out, "entry_bytes", ENTRY_SIZE);
            field(out, "entries_per_ledger", ENTRIES_PER_LEDGER);
            field(out, "kept", kept);
            field(out, "total_bytes_wanted", totalBytesWanted);
            field(out, "total_bytes_acked", acked);
            field(out, "adds_submitted", submitted);
            field(out, "adds_failed", addsFailed);
            field(out, "first_error", firstError);
            field(out, "stop_reason", stopReason);
            field(out, "seconds", round(seconds));
            field(out, "mib_per_s", round(mibPerSecond()));
            field(out, "median_mib_per_s", round(medianMibPerSecond()));
            field(out, "slowed_seconds", slowedSeconds());
            field(out, "used_start_mib", usedStart / MIB);
            field(out, "peak_used_mib", peakUsed / MIB);
            field(out, "peak_used_fraction", round(peakUsed / (double) fsTotal));
            field(out, "bookie_write_bytes", writeBytes);
            field(out, "wa", round(wa()));
            field(out, "fs_written_bytes", fsWritten);
            field(out, "fs_wa", round(fsWa()));
            field(out, "readonly_seen", readOnlySeen);
            field(out, "readonly_first_s", round(readOnlyFirstSeconds));
            field(out, "readonly_at_acked_mib", readOnlyAckedBytes < 0 ? -1
                    : readOnlyAckedBytes / MIB);
            field(out, "deleted_ledgers", deletes);
            field(out, "kept_ledgers", keptLedgers);
            field(out, "entries_verified", entriesVerified);
            field(out, "entries_verified_after_restart", entriesVerifiedAfterRestart);
            field(out, "restart_s", round(restartSeconds));
            field(out, "restarted_readonly", restartedReadOnly);
            field(out, "verify_error", verifyError);
            field(out, "sampler_error", samplerError);
            field(out, "metrics", metrics);
            StringBuilder series = new StringBuilder("[");
            for (int index = 0; index < perSecond.size(); index++) {
                long[] sample = perSecond.get(index);
                series.append(index == 0 ? "" : ",").append(String.format(Locale.ROOT,
                        "\n    [%d, %.2f, %d, %d]", index + 1, sample[0] / (double) MIB,
                        sample[1] / MIB, sample[2]));
            }
            out.append("  \"per_second_fields\": [\"second\", \"acked_mib\", \"peak_used_mib\","
                    + " \"readonly\"],\n");
            out.append("  \"per_second\": ").append(series).append("\n  ]\n}\n");
            return out.toString();
        }

        private static double round(double value) {
            return Math.round(value * 1000) / 1000.0;
        }

        private static void field(StringBuilder out, String key, Object value) {
            out.append("  \"").append(key).append("\": ").append(jsonValue(value)).append(",\n");
        }

        private static String jsonValue(Object value) {
            if (value == null) {
                return "null";
            }
            if (value instanceof Number || value instanceof Boolean) {
                return value.toString();
            }
            if (value instanceof List<?> list) {
                List<String> items = new ArrayList<>();
                for (Object item : list) {
                    items.add(jsonValue(item));
                }
                return "[" + String.join(", ", items) + "]";
            }
            StringBuilder text = new StringBuilder("\"");
            for (char c : value.toString().toCharArray()) {
                switch (c) {
                    case '"' -> text.append("\\\"");
                    case '\\' -> text.append("\\\\");
                    case '\n' -> text.append("\\n");
                    case '\t' -> text.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            text.append(String.format("\\u%04x", (int) c));
                        } else {
                            text.append(c);
                        }
                    }
                }
            }
            return text.append('"').toString();
        }
    }
}
