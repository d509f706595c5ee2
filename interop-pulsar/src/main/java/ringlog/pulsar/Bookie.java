package ringlog.pulsar;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.zookeeper.data.Stat;

/**
 * A bookie subprocess on a fixed loopback port and data directory; a restart reuses both. It is
 * ready when its own ephemeral znode /ledgers/available/127.0.0.1:PORT appears from a session
 * other than the one before a kill (as in interop/'s Bookie). The harness never registers a
 * bookie itself.
 */
abstract class Bookie extends Child {
    final int port;
    final ZooKeeperHost zk;
    private long registrationOwner = -1;

    Bookie(String name, Path dir, ZooKeeperHost zk) throws IOException {
        super(name, dir);
        this.zk = zk;
        this.port = freePort();
    }

    /**
     * Bookie number `index` of the cluster. With -Dringlog.pinned=true (the benchmark's pinned
     * layout), ringlog bookie N runs its one shard pinned to core N modulo the cores.
     */
    static Bookie create(Options options, int index, Path dir, ZooKeeperHost zk)
            throws IOException {
        String name = "bookie-" + index;
        Integer core = Boolean.getBoolean("ringlog.pinned")
                ? index % Runtime.getRuntime().availableProcessors() : null;
        return options.bookie().equals("java")
                ? new JavaBookie(name, dir, zk, options.scenarioTuning())
                : new RinglogBookie(name, dir, zk, options.ringlogBinary(), core,
                        options.scenarioTuning());
    }

    final String id() {
        return "127.0.0.1:" + port;
    }

    /** ringlog: --data-dir; Java: ledgerDirectories. */
    abstract Path dataDirectory();

    /**
     * The files that hold ledger data, which garbage collection must shrink: ringlog's whole
     * data directory (segments, indexes, checkpoint); the Java bookie's entry logs
     * (ledgers/current/N.log), not DbLedgerStorage's RocksDB index directories, whose
     * write-ahead logs RocksDB preallocates (about 70 MB each at the first write here).
     */
    abstract List<Path> ledgerData() throws IOException;

    abstract long startTimeoutMs();

    /** Everything the bookie stored (a disk lost for good); the log stays. */
    abstract List<Path> storage();

    final void deleteStorage() throws IOException {
        for (Path root : storage()) {
            if (Files.exists(root)) {
                try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
                    for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                        Files.delete(path);
                    }
                }
            }
        }
    }

    final void start() throws Exception {
        spawn();
        long deadline = System.currentTimeMillis() + startTimeoutMs();
        while (System.currentTimeMillis() < deadline) {
            Stat stat = zk.exists(ZooKeeperHost.AVAILABLE + "/" + id());
            if (stat != null && stat.getEphemeralOwner() != registrationOwner) {
                registrationOwner = stat.getEphemeralOwner();
                return;
            }
            checkAlive("registering");
            Thread.sleep(50);
        }
        throw new Failure(name + " did not register " + id() + " within " + startTimeoutMs()
                + " ms; " + log() + ": " + logTail());
    }

    /** SIGKILL, then waits until ZooKeeper has expired its registration (the broker sees it go). */
    final void killAndWaitExpired() throws Exception {
        kill();
        long deadline = System.currentTimeMillis() + 30_000;
        while (zk.exists(ZooKeeperHost.AVAILABLE + "/" + id()) != null) {
            Failure.check(System.currentTimeMillis() < deadline,
                    name + "'s registration outlived its session by 30 s");
            Thread.sleep(100);
        }
    }

    /** ringlog serve, one shard, registering itself through --zk. */
    static final class RinglogBookie extends Bookie {
        /** ZooKeeper's session timeout: how long a SIGKILLed bookie stays registered. */
        static final List<String> FLAGS = List.of("--shards", "1", "--http-listen", "off",
                "--zk-session-timeout-ms", "4000");
        /**
         * Options.scenarioTuning, for the rollover-retention-gc scenario: collection every 2 s
         * over 4 MiB segments, and dead segments unlinked at once rather than kept for reuse,
         * so space given back shows in du. Not in the benchmark: at 60 MB/s 4 MiB segments
         * are 15 segments created, zeroed and synced a second.
         */
        static final List<String> SCENARIO_FLAGS = List.of("--gc-interval-ms", "2000",
                "--segment-size", "4194304", "--segment-recycle-max", "0");
        private final Path binary;
        /** --cores: the one core its shard is pinned to, or null (unpinned, the default). */
        private final Integer core;
        private final boolean scenarioTuning;

        RinglogBookie(String name, Path dir, ZooKeeperHost zk, Path binary, Integer core,
                boolean scenarioTuning) throws IOException {
            super(name, dir, zk);
            this.binary = binary;
            this.core = core;
            this.scenarioTuning = scenarioTuning;
        }

        @Override
        Path dataDirectory() {
            return dir.resolve("data");
        }

        @Override
        List<Path> storage() {
            return List.of(dataDirectory());
        }

        @Override
        List<Path> ledgerData() {
            return List.of(dataDirectory());
        }

        @Override
        List<String> command() {
            Failure.check(Files.isExecutable(binary), "no ringlog binary at " + binary
                    + ": run `cargo build --release -p server` or set RINGLOG_BIN");
            List<String> command = new ArrayList<>(List.of(binary.toString(), "serve",
                    "--data-dir", dataDirectory().toString(), "--listen", id(),
                    "--zk", zk.connectString(), "--zk-root", ZooKeeperHost.LEDGERS,
                    "--advertised-address", id()));
            command.addAll(FLAGS);
            if (scenarioTuning) {
                command.addAll(SCENARIO_FLAGS);
            }
            if (core != null) {
                command.addAll(List.of("--cores", core.toString()));
            }
            if (TlsMode.dir() != null) {
                command.addAll(TlsMode.ringlogFlags(TlsMode.dir()));
            }
            // -Dringlog.args: more `ringlog serve` flags, to measure or test a setting without
            // editing the suite (one the suite already sets is refused by serve as repeated).
            String extra = System.getProperty("ringlog.args", "").trim();
            if (!extra.isEmpty()) {
                command.addAll(List.of(extra.split("\\s+")));
            }
            return command;
        }

        @Override
        long startTimeoutMs() {
            return 30_000;
        }
    }

    /** bookkeeper-server's org.apache.bookkeeper.server.Main (the version Pulsar bundles). */
    static final class JavaBookie extends Bookie {
        static final List<String> MEMORY = List.of("-Xms384m", "-Xmx384m",
                "-XX:MaxDirectMemorySize=256m");

        /** Options.scenarioTuning: collection and compaction every second or so. */
        private final boolean scenarioTuning;

        JavaBookie(String name, Path dir, ZooKeeperHost zk, boolean scenarioTuning)
                throws IOException {
            super(name, dir, zk);
            this.scenarioTuning = scenarioTuning;
        }

        @Override
        Path dataDirectory() {
            return dir.resolve("ledgers");
        }

        @Override
        List<Path> storage() {
            return List.of(dataDirectory(), dir.resolve("journal"));
        }

        @Override
        List<Path> ledgerData() throws IOException {
            Path current = dataDirectory().resolve("current");
            if (!Files.isDirectory(current)) {
                return List.of();
            }
            try (java.util.stream.Stream<Path> files = Files.list(current)) {
                return files.filter(f -> f.getFileName().toString().matches("[0-9a-f]+\\.log"))
                        .toList();
            }
        }

        /** Every key set; everything else is bookkeeper-server's default. */
        Map<String, String> settings() {
            Map<String, String> settings = new java.util.LinkedHashMap<>();
            settings.put("bookiePort", Integer.toString(port));
            settings.put("advertisedAddress", "127.0.0.1");
            settings.put("allowLoopback", "true");
            settings.put("metadataServiceUri", zk.metadataServiceUri());
            settings.put("zkTimeout", "4000");
            settings.put("journalDirectories", dir.resolve("journal").toString());
            settings.put("ledgerDirectories", dataDirectory().toString());
            settings.put("journalSyncData", "true");
            settings.put("httpServerEnabled", "false");
            settings.put("autoRecoveryDaemonEnabled", "false");
            if (TlsMode.dir() != null) {
                TlsMode.javaBookieSettings(settings, TlsMode.dir());
            }
            // The ledger storage Pulsar's own conf/bookkeeper.conf sets (bookkeeper-server's
            // default, SortedLedgerStorage, keeps up to 64 MB in memory and journal only, so
            // its ledger directory does not grow for a while), with small caches for this
            // JVM's 256 MB of direct memory; it writes the ledger directory at each
            // checkpoint (flushInterval).
            settings.put("ledgerStorageClass",
                    "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage");
            settings.put("dbStorage_writeCacheMaxSizeMb", "32");
            settings.put("dbStorage_readAheadCacheMaxSizeMb", "16");
            settings.put("dbStorage_rocksDB_blockCacheSize", "16777216");
            if (scenarioTuning) {
                // As interop/'s gc-delete-ledgers: collection every second over 4 MiB entry
                // logs, with compaction, since entry logs mix ledgers. Not in the benchmark.
                settings.put("gcWaitTime", "1000");
                settings.put("logSizeLimit", "4194304");
                settings.put("flushInterval", "1000");
                settings.put("minorCompactionInterval", "2");
                settings.put("majorCompactionInterval", "4");
                settings.put("compactionRateByEntries", "100000");
            }
            return settings;
        }

        @Override
        List<String> command() throws IOException {
            StringBuilder text = new StringBuilder("# generated by interop-pulsar\n");
            settings().forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
            Path conf = dir.resolve("bookie.conf");
            Files.writeString(conf, text, StandardCharsets.UTF_8);
            return Jvm.command(MEMORY, "org.apache.bookkeeper.server.Main", "-c", conf.toString());
        }

        @Override
        long startTimeoutMs() {
            return 90_000;
        }
    }
}
