package ringlog.interop;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The interop suite: the real Java BookKeeper client (bookkeeper-server 4.18.2) against real
 * bookies (-Dbookie=ringlog|java), each scenario on a fresh in-process ZooKeeper and fresh
 * bookies. Prints "PASS|FAIL name numbers" per scenario, then "N passed, M failed"; exits 1 on
 * any failure.
 */
public final class Main {
    /** One scenario: how many bookies it needs, how long it may take, and its body. */
    record Scenario(String name, int bookieCount, int timeoutSeconds, Body body,
            Map<String, String> javaSettings, String skipReason) {
        Scenario(String name, int bookieCount, int timeoutSeconds, Body body) {
            this(name, bookieCount, timeoutSeconds, body, Map.of(), null);
        }

        Scenario(String name, int bookieCount, int timeoutSeconds, Body body,
                Map<String, String> javaSettings) {
            this(name, bookieCount, timeoutSeconds, body, javaSettings, null);
        }
    }

    interface Body {
        String run(Cluster cluster) throws Exception;
    }

    private Main() {}

    public static void main(String[] arguments) {
        int status;
        try {
            status = run();
        } catch (Throwable error) {
            System.out.println("FAIL setup " + describe(error));
            System.out.println("0 passed, 1 failed");
            status = 1;
        }
        // Client, ZooKeeper and Netty threads are not all daemons: exit explicitly.
        System.out.flush();
        System.exit(status);
    }

    private static int run() throws Exception {
        Options options = Options.fromSystemProperties();
        Path runDir = Files.createTempDirectory(options.baseDir(), "ringlog-interop-");
        Tls.Certificates certs = Tls.Certificates.make(runDir.resolve("certs"));
        Path live = Tls.liveDirectory(certs);
        boolean ringlog = options.bookie().equals("ringlog");
        List<Scenario> scenarios = List.of(
                new Scenario("v3-sync-write-read", 1, 300, c -> Scenarios.syncWriteRead(c, false)),
                new Scenario("v2-crc32c-sync-write-read", 1, 300,
                        c -> Scenarios.syncWriteRead(c, true)),
                new Scenario("ensemble-change-sigkill", 4, 120, Scenarios::ensembleChange),
                new Scenario("recovery-fencing", 1, 60, Scenarios::recoveryFencing),
                new Scenario("deferred-sync-force", 1, 120, Scenarios::deferredSync),
                new Scenario("explicit-lac-long-poll", 1, 60, Scenarios::explicitLacLongPoll),
                // Collection every second; small segments (ringlog) and entry logs (Java).
                // The Java bookie's entry logs mix ledgers, so it needs its compaction too.
                new Scenario("gc-delete-ledgers", 1, 240, Scenarios::gcDeleteLedgers, Map.of(
                        "--gc-interval-ms", "1000", "--segment-size", "4194304",
                        "gcWaitTime", "1000", "logSizeLimit", "4194304",
                        "flushInterval", "1000", "minorCompactionInterval", "2",
                        "majorCompactionInterval", "4", "compactionRateByEntries", "100000")),
                // The same with the 20 ledgers written at once, so every segment and entry log
                // holds all of them and space comes back only by compaction: 2 GB, or about
                // 100 MB with -Dquick=true.
                new Scenario("gc-compact-interleaved", 1, 480,
                        c -> Scenarios.gcCompactInterleaved(c, options.quick()), Map.of(
                        "--gc-interval-ms", "1000", "--segment-size", "4194304",
                        "--compaction-rate-mib", "512",
                        "gcWaitTime", "1000", "logSizeLimit", "4194304",
                        "flushInterval", "1000", "minorCompactionInterval", "2",
                        "majorCompactionInterval", "4", "compactionRateByEntries", "1000000")),
                new Scenario("bench-writes", 1, options.benchSeconds() + 150,
                        c -> BenchWrites.run(c, options.benchSeconds()),
                        BenchWrites.JAVA_BOOKIE_SETTINGS),
                diskFull(options),
                diskChurn(options),
                // Issue 34: TLS with client certificates (docs/security.md).
                new Scenario("tls-v3-pem-write-read-recover", 1, 180,
                        c -> Tls.writeReadRecover(c, certs, false, false),
                        Tls.bookieSettings(certs, false, false, null)),
                new Scenario("tls-v2-pkcs12-write-read-recover", 1, 180,
                        c -> Tls.writeReadRecover(c, certs, true, true),
                        Tls.bookieSettings(certs, false, false, null)),
                new Scenario("tls-roles-and-refusals", 1, 180,
                        c -> Tls.refusals(c, certs, ringlog),
                        Tls.bookieSettings(certs, true, ringlog, null)),
                new Scenario("tls-certificate-rotation", 1, 180,
                        c -> Tls.rotation(c, certs, live),
                        Tls.bookieSettings(certs, false, false, live)),
                // Issue 35 (docs/scrub.md): damage written into sealed segment files is found
                // by the scrubber and repaired from the replicas, or the ledger is marked
                // under-replicated when no good copy is left (ScrubRepair).
                new Scenario("scrub-repair", 3, 420,
                        c -> ScrubRepair.repair(c, options.quick()), ScrubRepair.SETTINGS,
                        ringlog ? null : ScrubRepair.JAVA_SKIP),
                new Scenario("scrub-mark-underreplicated", 3, 240,
                        ScrubRepair::markUnderreplicated, ScrubRepair.SETTINGS,
                        ringlog ? null : ScrubRepair.JAVA_SKIP));
        int passed = 0;
        int failed = 0;
        int skipped = 0;
        try {
            printHeader(options, runDir);
            for (Scenario scenario : scenarios) {
                if (!options.selected(scenario.name())) {
                    continue;
                }
                if (scenario.skipReason() != null) {
                    System.out.println("SKIP " + scenario.name() + " " + scenario.skipReason());
                    skipped += 1;
                    continue;
                }
                if (runOne(options, runDir.resolve(scenario.name()), scenario)) {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
        } finally {
            // Bookie data can be gigabytes (ringlog fallocates its segments): never leave it.
            if (options.keep()) {
                System.out.println("# kept " + runDir);
            } else {
                deleteTree(runDir);
            }
        }
        System.out.println(passed + " passed, " + failed + " failed"
                + (skipped > 0 ? ", " + skipped + " skipped" : ""));
        return failed == 0 && passed + skipped > 0 ? 0 : 1;
    }

    /**
     * disk-full runs only on the small file system scripts/disk_full.sh mounts for it (root,
     * a loop device), with ringlog: filling the run directory's own disk would take everything
     * else on it down too.
     */
    private static Scenario diskFull(Options options) {
        String skip = null;
        if (!options.bookie().equals("ringlog")) {
            skip = "(ringlog only: the Java bookie's disk thresholds and compaction settings"
                    + " are another test)";
        } else if (options.diskFullDir() == null) {
            skip = "(needs its own small file system: run `make disk-full`, which mounts one"
                    + " and passes -Ddiskfull.dir)";
        }
        Map<String, String> settings = Map.of();
        if (options.diskFullDir() != null) {
            // Small segments, so a 1 GiB file system holds dozens and deletions give whole
            // ones back; collection every 2 s, so recovery is quick to see.
            settings = Map.of("--data-dir", options.diskFullDir().resolve("data").toString(),
                    "--segment-size", Integer.toString(DiskFull.SEGMENT_SIZE),
                    "--gc-interval-ms", "2000");
        }
        return new Scenario("disk-full", 1, 170, DiskFull::run, settings, skip);
    }

    /**
     * disk-churn (issue 33) runs only on the small file system scripts/disk_pressure.sh mounts
     * for it (-Ddiskchurn.dir), with either bookie: two interleaved streams, half the disk
     * live, TOTAL (10 GiB) through it (DiskChurn; -Ddiskchurn.* options in interop/README.md).
     */
    private static Scenario diskChurn(Options options) {
        DiskChurn.Config config = DiskChurn.Config.fromSystemProperties();
        if (config.dir() == null) {
            return new Scenario("disk-churn", 1, 60, c -> "", Map.of(), "(needs its own small"
                    + " file system: run `make disk-pressure`, which mounts one and passes"
                    + " -Ddiskchurn.dir)");
        }
        return new Scenario("disk-churn", 1, config.timeoutSeconds(),
                c -> DiskChurn.run(c, config), config.settings(), null);
    }

    private static void printHeader(Options options, Path runDir) throws Exception {
        System.out.println("# interop: bookie=" + options.bookie() + " client=bookkeeper-server "
                + org.apache.bookkeeper.client.BookKeeper.class.getPackage()
                        .getImplementationVersion()
                + " zookeeper=" + org.apache.zookeeper.Version.getFullVersion()
                + " quick=" + options.quick() + " bench_time_s=" + options.benchSeconds()
                + " dir=" + runDir);
        if (options.bookie().equals("ringlog")) {
            System.out.println("# ringlog: " + options.ringlogBinary()
                    + " serve --shards 1 --zk ... --zk-root /ledgers (other flags default)");
        } else {
            Path probe = runDir.resolve("settings-probe");
            try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start(probe.resolve("zookeeper"))) {
                System.out.println("# java bookie settings: "
                        + new JavaBookie("probe", probe.resolve("bookie"), zk, Map.of()).describe());
            }
        }
    }

    /** Runs one scenario under a watchdog; a hang is a FAIL, and closing the cluster frees it. */
    private static boolean runOne(Options options, Path dir, Scenario scenario) {
        long start = System.nanoTime();
        ExecutorService executor = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "scenario-" + scenario.name());
            thread.setDaemon(true);
            return thread;
        });
        Cluster[] cluster = new Cluster[1];
        String outcome;
        boolean pass = false;
        try {
            Scenarios.step("cluster start");
            Future<String> numbers = executor.submit(() -> {
                cluster[0] = Cluster.start(options, dir, scenario.bookieCount(),
                        scenario.javaSettings());
                return scenario.body().run(cluster[0]);
            });
            outcome = numbers.get(scenario.timeoutSeconds(), TimeUnit.SECONDS);
            pass = true;
        } catch (TimeoutException e) {
            outcome = "timed out after " + scenario.timeoutSeconds() + " s [at: "
                    + Scenarios.step + "]";
        } catch (ExecutionException e) {
            outcome = describe(e.getCause()) + " [at: " + Scenarios.step + "]";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            outcome = "interrupted";
        } finally {
            executor.shutdownNow();
        }
        if (cluster[0] != null) {
            cluster[0].close();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("%s %s %s scenario_s=%.1f%n", pass ? "PASS" : "FAIL", scenario.name(),
                outcome, seconds);
        System.out.flush();
        return pass;
    }

    private static String describe(Throwable error) {
        // Futures wrap the cause; the FAIL line wants the cause itself.
        while ((error instanceof ExecutionException || error instanceof CompletionException)
                && error.getCause() != null) {
            error = error.getCause();
        }
        if (error instanceof Check.Failure) {
            return error.getMessage();
        }
        StringBuilder text = new StringBuilder(error.toString());
        for (Throwable cause = error.getCause(); cause != null; cause = cause.getCause()) {
            text.append(" <- ").append(cause);
        }
        return text.toString().replace('\n', ' ');
    }

    private static void deleteTree(Path root) throws IOException {
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes)
                    throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException error)
                    throws IOException {
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
