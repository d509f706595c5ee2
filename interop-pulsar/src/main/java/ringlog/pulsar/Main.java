package ringlog.pulsar;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * A real Pulsar 4.2.4 broker on three bookies (-Dbookie=ringlog|java), E2/W2/A2, driven by the
 * real pulsar-client. Prints "PASS|FAIL name numbers" per scenario, then "N passed, M failed";
 * exits 1 on any failure.
 */
public final class Main {
    record Scenario(String name, int timeoutSeconds, Body body) {}

    interface Body {
        String run(PulsarCluster cluster) throws Exception;
    }

    /**
     * The pulsar-client logs one INFO line through java.util.logging (OpenTelemetry's
     * autoconfiguration is off); the suite prints only its own lines. Held: JUL keeps loggers
     * weakly.
     */
    private static final java.util.logging.Logger OPENTELEMETRY_LOG =
            java.util.logging.Logger.getLogger("io.opentelemetry");

    private Main() {}

    static void quietClientLogging() {
        OPENTELEMETRY_LOG.setLevel(java.util.logging.Level.WARNING);
    }

    public static void main(String[] arguments) {
        // Interrupted (Ctrl-C, SIGTERM) or done: no bookie or broker outlives the suite.
        Runtime.getRuntime().addShutdownHook(new Thread(Child::killAllSpawned));
        quietClientLogging();
        int status;
        try {
            status = run();
        } catch (Throwable error) {
            System.out.println("FAIL setup " + describe(error) + " [at: " + Scenarios.step + "]");
            System.out.println("0 passed, 1 failed");
            status = 1;
        }
        // Client, ZooKeeper and Netty threads are not all daemons: exit explicitly.
        System.out.flush();
        System.exit(status);
    }

    private static int run() throws Exception {
        Options options = Options.fromSystemProperties();
        Files.createDirectories(options.baseDir());
        Path runDir = Files.createTempDirectory(options.baseDir(), "ringlog-interop-pulsar-");
        List<Scenario> scenarios = List.of(
                new Scenario("produce-consume", 300, Scenarios::produceConsume),
                new Scenario("bookie-kill-ensemble-change", 240, Scenarios::bookieKill),
                new Scenario("broker-kill-recovery", 300, Scenarios::brokerKill),
                new Scenario("single-bookie-reads", 240, Scenarios::singleBookieReads),
                new Scenario("rollover-retention-gc", 360, Scenarios::rolloverRetentionGc),
                // Last: its lost bookie does not come back.
                new Scenario("bookie-lost-autorecovery", 360, Scenarios::bookieLostAutoRecovery));
        int passed = 0;
        int failed = 0;
        PulsarCluster cluster = null;
        long start = System.nanoTime();
        try {
            System.out.println("# interop-pulsar: bookie=" + options.bookie() + " pulsar="
                    + org.apache.pulsar.PulsarVersion.getVersion() + " bookkeeper="
                    + org.apache.bookkeeper.client.BookKeeper.class.getPackage()
                            .getImplementationVersion()
                    + " zookeeper=" + org.apache.zookeeper.Version.getFullVersion()
                    + " quick=" + options.quick() + " dir=" + runDir);
            if (TlsMode.dir() != null) {
                System.out.println("# tls: bookies " + String.join(" ",
                        TlsMode.ringlogFlags(TlsMode.dir())) + "; broker "
                        + "bookkeeperTLSClientAuthentication=true (TlsMode)");
            }
            if (options.bookie().equals("ringlog")) {
                System.out.println("# ringlog: " + options.ringlogBinary() + " serve --zk ..."
                        + " --advertised-address 127.0.0.1:PORT "
                        + String.join(" ", Bookie.RinglogBookie.FLAGS));
            } else {
                System.out.println("# java bookie: jvm " + Bookie.JavaBookie.MEMORY + ", conf "
                        + "(besides ports, dirs, metadataServiceUri) journalSyncData=true"
                        + " ledgerStorageClass=DbLedgerStorage (write cache 32 MB,"
                        + " read-ahead 16 MB, RocksDB block cache 16 MB)"
                        + " zkTimeout=4000 gcWaitTime=1000 logSizeLimit=4194304"
                        + " flushInterval=1000 minor/majorCompactionInterval=2/4"
                        + " compactionRateByEntries=100000");
            }
            Scenarios.step("cluster start");
            cluster = PulsarCluster.start(options, runDir);
            System.out.printf("# cluster up in %.1f s: zookeeper %s, metadata setup %.1f s"
                    + " (/ledgers then held %s; now %s), 3 bookies, broker %s (start %.1f s),"
                    + " E2/W2/A2, managedLedgerMaxEntriesPerLedger=%d, broker cache off%n",
                    (System.nanoTime() - start) / 1e9, cluster.zk.connectString(),
                    cluster.metadataSetupSeconds, cluster.ledgersAfterSetup,
                    cluster.zk.children(ZooKeeperHost.LEDGERS).stream().sorted().toList(),
                    cluster.broker.serviceUrl(),
                    cluster.brokerStartSeconds, Broker.ENTRIES_PER_LEDGER);
            for (Scenario scenario : scenarios) {
                if (!options.selected(scenario.name())) {
                    continue;
                }
                if (runOne(cluster, scenario)) {
                    passed += 1;
                } else {
                    failed += 1;
                }
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
            if (options.keep()) {
                System.out.println("# kept " + runDir);
            } else {
                deleteTree(runDir);
            }
        }
        System.out.printf("%d passed, %d failed, total_s=%.1f%n", passed, failed,
                (System.nanoTime() - start) / 1e9);
        return failed == 0 && passed > 0 ? 0 : 1;
    }

    /** Heals the cluster, then runs one scenario under a watchdog: a hang is a FAIL. */
    private static boolean runOne(PulsarCluster cluster, Scenario scenario) {
        long start = System.nanoTime();
        ExecutorService executor = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "scenario-" + scenario.name());
            thread.setDaemon(true);
            return thread;
        });
        String outcome;
        boolean pass = false;
        try {
            Future<String> numbers = executor.submit(() -> {
                Scenarios.step("restart what the last scenario killed");
                cluster.heal();
                Scenarios.step("start");
                return scenario.body().run(cluster);
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
        System.out.printf("%s %s %s scenario_s=%.1f%n", pass ? "PASS" : "FAIL", scenario.name(),
                outcome, (System.nanoTime() - start) / 1e9);
        System.out.flush();
        return pass;
    }

    private static String describe(Throwable error) {
        while ((error instanceof ExecutionException || error instanceof CompletionException
                || (error instanceof RuntimeException && !(error instanceof Failure)
                        && error.getCause() != null && error.getMessage() != null
                        && error.getMessage().equals(error.getCause().toString())))
                && error.getCause() != null) {
            error = error.getCause();
        }
        if (error instanceof Failure) {
            return error.getMessage();
        }
        StringBuilder text = new StringBuilder(error.toString());
        for (Throwable cause = error.getCause(); cause != null; cause = cause.getCause()) {
            text.append(" <- ").append(cause);
        }
        return text.toString().replace('\n', ' ');
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
