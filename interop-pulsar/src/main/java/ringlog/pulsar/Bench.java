package ringlog.pulsar;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;

/**
 * `make compare`'s Pulsar producer benchmark: a fresh cluster (ZooKeeper, metadata setup,
 * -Dbench.bookies bookies of -Dbookie, default 2, the layout: E2/W2/A2, so each bookie
 * takes every entry; ringlog's pinned to a core each with -Dringlog.pinned=true; one broker;
 * broker and bookies with their defaults, not the scenarios' tuning: Options.forBenchmark),
 * then per workload a new topic and a pulsar-client producer keeping OUTSTANDING 1 KiB
 * messages in flight for -Dbench.warmup seconds (not counted) and -Dbench.seconds measured.
 * One line per workload:
 *
 * <pre>BENCH batching=off outstanding=100 msgs_s=.. p50_ms=.. p99_ms=.. max_ms=.. errors=0</pre>
 *
 * Latency is from sendAsync to its acknowledgement. Exits 1 if the cluster did not start.
 */
public final class Bench {
    private Bench() {}

    public static void main(String[] arguments) {
        Runtime.getRuntime().addShutdownHook(new Thread(Child::killAllSpawned));
        Main.quietClientLogging();
        int status = 0;
        try {
            run();
        } catch (Throwable error) {
            System.out.println("FAILED " + error);
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }

    private static void run() throws Exception {
        Options options = Options.fromSystemProperties().forBenchmark();
        int bookies = Integer.getInteger("bench.bookies", 2);
        int seconds = Integer.getInteger("bench.seconds", 20);
        int warmup = Integer.getInteger("bench.warmup", 5);
        Files.createDirectories(options.baseDir());
        Path dir = Files.createTempDirectory(options.baseDir(), "ringlog-pulsar-bench-");
        try (PulsarCluster cluster = PulsarCluster.start(options, dir, bookies)) {
            System.out.printf("# bench: bookie=%s bookies=%d%s E2/W2/A2 seconds=%d warmup=%d"
                    + " size=%d%n", options.bookie(), bookies,
                    options.bookie().equals("ringlog") && Boolean.getBoolean("ringlog.pinned")
                            ? " pinned (bookie N: --cores N)" : "",
                    seconds, warmup, Messages.SIZE);
            PulsarClient client = cluster.client();
            for (boolean batching : new boolean[] {false, true}) {
                for (int outstanding : new int[] {100, 1000}) {
                    String topic = Scenarios.topic("bench-" + (batching ? "batch" : "plain")
                            + "-" + outstanding);
                    try (Producer<byte[]> producer =
                            Messages.producer(client, topic, batching, outstanding)) {
                        System.out.println(measure(producer, batching, outstanding, seconds,
                                warmup));
                        System.out.flush();
                    }
                }
            }
        } finally {
            if (!options.keep()) {
                try (Stream<Path> paths = Files.walk(dir)) {
                    for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                        Files.deleteIfExists(path);
                    }
                }
            }
        }
    }

    private static String measure(Producer<byte[]> producer, boolean batching, int outstanding,
            int seconds, int warmup) throws Exception {
        byte[] body = Messages.body("bench", 0);
        Semaphore window = new Semaphore(outstanding);
        AtomicLong errors = new AtomicLong();
        long start = System.nanoTime();
        long measureFrom = start + TimeUnit.SECONDS.toNanos(warmup);
        long end = measureFrom + TimeUnit.SECONDS.toNanos(seconds);
        // Latencies in microseconds of the sends made in the measured window.
        long[][] latencies = {new long[1 << 20]};
        int[] count = {0};
        Object lock = new Object();
        long now;
        while ((now = System.nanoTime()) < end) {
            window.acquire();
            long sent = System.nanoTime();
            boolean measured = sent >= measureFrom;
            producer.sendAsync(body).whenComplete((id, failure) -> {
                long micros = (System.nanoTime() - sent) / 1000;
                if (failure != null) {
                    errors.incrementAndGet();
                } else if (measured) {
                    synchronized (lock) {
                        if (count[0] == latencies[0].length) {
                            latencies[0] = Arrays.copyOf(latencies[0], count[0] * 2);
                        }
                        latencies[0][count[0]++] = micros;
                    }
                }
                window.release();
            });
        }
        window.tryAcquire(outstanding, 120, TimeUnit.SECONDS);
        long[] sorted;
        synchronized (lock) {
            sorted = Arrays.copyOf(latencies[0], count[0]);
        }
        Arrays.sort(sorted);
        double elapsed = (end - measureFrom) / 1e9;
        return String.format("BENCH batching=%s outstanding=%d msgs_s=%.0f p50_ms=%.2f"
                + " p99_ms=%.2f max_ms=%.2f errors=%d", batching ? "on" : "off", outstanding,
                sorted.length / elapsed, percentile(sorted, 0.50), percentile(sorted, 0.99),
                sorted.length == 0 ? 0 : sorted[sorted.length - 1] / 1000.0, errors.get());
    }

    private static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1000.0;
    }
}
