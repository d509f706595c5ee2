package ringlog.interop;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.LedgerHandle;

/**
 * BenchThroughputLatency-equivalent: org.apache.bookkeeper:bookkeeper-benchmark 4.18.2 does not
 * resolve from the registry here, so this is a loop with the same semantics as
 * `bin/benchmark writes -ensemble 1 -quorum 1 -ackQuorum 1 -ledgers 50 -throttle 20000`:
 * one sender thread, a random ledger per add, a semaphore of `throttle` outstanding adds (the
 * same value also set as the client's per-ledger throttle), 1024-byte entries of 'x', CRC32
 * digest, password benchPasswd, latency from submit to callback (successes only), a 10,000-add
 * warm-up, up to 30 s to drain, throughput = completions x 1000 / elapsed ms.
 */
final class BenchWrites {
    static final String LABEL = "BenchThroughputLatency-equivalent";
    static final int LEDGER_COUNT = 50;
    static final int THROTTLE = 20_000;
    static final int ENTRY_SIZE = 1024;
    static final int WARMUP_COUNT = 10_000;
    static final int SEND_LIMIT = 20_000_000;
    static final byte[] PASSWORD = "benchPasswd".getBytes(StandardCharsets.UTF_8);

    private BenchWrites() {}

    /**
     * The one non-default Java bookie setting, for this scenario only: with the default
     * maxPendingAddRequestsPerThread (10000, one add thread) below the 20000 in flight, the
     * bookie answers "Too many requests" and, with one bookie, every add then fails.
     * -Djava.bookie.conf=maxPendingAddRequestsPerThread=10000 reproduces the default.
     */
    static final Map<String, String> JAVA_BOOKIE_SETTINGS =
            Map.of("maxPendingAddRequestsPerThread", Integer.toString(2 * THROTTLE));

    /** -Dbench.v2=true is the original's -useV2: the v2 wire protocol. */
    static final boolean USE_V2 = Boolean.parseBoolean(System.getProperty("bench.v2", "false"));

    static String run(Cluster cluster, int seconds) throws Exception {
        Bookie bookie = cluster.bookies.get(0);
        ProcessUsage before = bookie.usage();
        BookKeeper client = cluster.client(conf -> {
            conf.setThrottleValue(THROTTLE);
            conf.setReadTimeout(5);
            conf.setUseV2WireProtocol(USE_V2);
        });
        byte[] data = new byte[ENTRY_SIZE];
        Arrays.fill(data, (byte) 'x');
        Scenarios.step("warm-up");
        double warmupSeconds = warmUp(client, data);
        Scenarios.step("timed run");

        LedgerHandle[] ledgers = new LedgerHandle[LEDGER_COUNT];
        for (int index = 0; index < LEDGER_COUNT; index++) {
            ledgers[index] = client.createLedger(1, 1, 1, DigestType.CRC32, PASSWORD);
        }
        long[] latencies = new long[SEND_LIMIT];
        AtomicInteger completions = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        Map<String, AtomicInteger> errors = new ConcurrentHashMap<>();
        AtomicLong firstErrorMs = new AtomicLong(-1);
        Semaphore outstanding = new Semaphore(THROTTLE);
        Random random = new Random();
        ProcessUsage measuredFrom = bookie.usage();
        ProcessUsage clientFrom = ProcessUsage.read(ProcessHandle.current().pid());
        long start = System.nanoTime();
        long end = start + TimeUnit.SECONDS.toNanos(seconds);
        long sent = 0;
        while (System.nanoTime() < end && sent < SEND_LIMIT) {
            outstanding.acquire();
            LedgerHandle ledger = ledgers[random.nextInt(LEDGER_COUNT)];
            ledger.asyncAddEntry(data, (rc, lh, entryId, context) -> {
                if (rc == BKException.Code.OK) {
                    latencies[completions.getAndIncrement()] = System.nanoTime() - (long) context;
                } else {
                    failures.incrementAndGet();
                    firstErrorMs.compareAndSet(-1,
                            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                    errors.computeIfAbsent(BKException.getMessage(rc),
                            key -> new AtomicInteger()).incrementAndGet();
                }
                outstanding.release();
            }, System.nanoTime());
            sent += 1;
        }
        boolean drained = outstanding.tryAcquire(THROTTLE, 30, TimeUnit.SECONDS);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        ProcessUsage after = bookie.usage();
        double clientCpuSeconds = ProcessUsage.read(ProcessHandle.current().pid())
                .since(clientFrom).cpuSeconds();
        Check.that(drained, "adds still outstanding 30 s after the run");
        // The original bounds each add by its 5 s -sockettimeout too: a slower add fails, and
        // with one bookie the ensemble change that follows fails every add of that ledger.
        Check.that(failures.get() == 0, failures.get() + " adds failed after " + completions.get()
                + " succeeded, the first " + firstErrorMs.get() + " ms into the run: " + errors
                + " (with one bookie, any add error makes the client change ensemble, which fails;"
                + " -Dinterop.log.level=WARN shows the bookie's error)");

        int count = completions.get();
        Check.that(count > 0, "no add completed");
        long[] sorted = Arrays.copyOf(latencies, count);
        Arrays.sort(sorted);
        double throughput = count * 1000.0 / elapsedMs;
        double p95 = sorted[(int) (count * 0.95)] / 1e6;
        double p99 = sorted[(int) (count * 0.99)] / 1e6;
        ProcessUsage used = after.since(measuredFrom);
        System.out.printf("  %s: %d adds in %d ms: %.0f ops/s%n", LABEL, count, elapsedMs,
                throughput);
        System.out.printf("  95th percentile latency: %.3f ms%n", p95);
        System.out.printf("  99th percentile latency: %.3f ms%n", p99);
        System.out.printf("  bookie %s (pid %d): %.2f CPU s in the run (%.1f us per add),"
                + " peak RSS %d MiB; whole life %.2f CPU s%n", bookie.name, bookie.pid(),
                used.cpuSeconds(), used.cpuSeconds() * 1e6 / count, after.rssPeakKib() / 1024,
                after.since(before).cpuSeconds());
        System.out.printf("  client (this JVM, one sender thread): %.2f CPU s in the run%n",
                clientCpuSeconds);
        String wire = USE_V2 ? "v2" : "v3";
        if (bookie instanceof JavaBookie java) {
            wire += " java_bookie_settings=" + java.settingsBeyondDefaults();
        }
        return String.format("%s wire=%s ops_per_s=%.0f p95_ms=%.3f p99_ms=%.3f adds=%d"
                + " time_s=%d warmup_s=%.1f bookie_cpu_s=%.2f bookie_rss_peak_mib=%d"
                + " client_cpu_s=%.2f", LABEL, wire, throughput, p95, p99, count, seconds,
                warmupSeconds, used.cpuSeconds(), after.rssPeakKib() / 1024, clientCpuSeconds);
    }

    /** As the original: WARMUP_COUNT adds on one ledger across all bookies, all awaited. */
    private static double warmUp(BookKeeper client, byte[] data) throws Exception {
        long start = System.nanoTime();
        LedgerHandle ledger = client.createLedger(1, 1, 1, DigestType.CRC32, PASSWORD);
        Semaphore outstanding = new Semaphore(THROTTLE);
        AtomicInteger failures = new AtomicInteger();
        for (int index = 0; index < WARMUP_COUNT; index++) {
            outstanding.acquire();
            ledger.asyncAddEntry(data, (rc, lh, entryId, context) -> {
                if (rc != BKException.Code.OK) {
                    failures.incrementAndGet();
                }
                outstanding.release();
            }, null);
        }
        Check.that(outstanding.tryAcquire(THROTTLE, 60, TimeUnit.SECONDS), "warm-up did not drain");
        Check.equal(0, failures.get(), "failed warm-up adds");
        ledger.close();
        return (System.nanoTime() - start) / 1e9;
    }
}
