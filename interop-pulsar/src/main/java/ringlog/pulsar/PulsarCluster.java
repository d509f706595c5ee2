package ringlog.pulsar;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.PulsarClient;

/**
 * The run's world: an in-process ZooKeeper, the metadata PulsarClusterMetadataSetup writes,
 * three bookies (ringlog or Java; the benchmark takes two), one broker, and the clients the
 * scenarios use: a pulsar-client, PulsarAdmin, and a BookKeeper client that only reads ledger
 * metadata.
 * Scenarios share it (a broker start costs tens of seconds on two cores); heal() brings back
 * whatever a scenario killed, on the same ports and data, before the next one runs.
 */
final class PulsarCluster implements AutoCloseable {
    static final int BOOKIES = 3;

    final Options options;
    final Path dir;
    final ZooKeeperHost zk;
    final List<Bookie> bookies = new ArrayList<>();
    Broker broker;
    private PulsarAdmin admin;
    private BookKeeper bookkeeper;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    /** Seconds the first broker start took (printed in the header). */
    double brokerStartSeconds;
    double metadataSetupSeconds;
    /** The children of /ledgers PulsarClusterMetadataSetup left (printed in the header). */
    List<String> ledgersAfterSetup;

    private PulsarCluster(Options options, Path dir, ZooKeeperHost zk) {
        this.options = options;
        this.dir = dir;
        this.zk = zk;
    }

    static PulsarCluster start(Options options, Path dir) throws Exception {
        return start(options, dir, BOOKIES);
    }

    static PulsarCluster start(Options options, Path dir, int bookieCount) throws Exception {
        PulsarCluster cluster = new PulsarCluster(options,  dir,
                ZooKeeperHost.start(dir.resolve("zookeeper")));
        try {
            cluster.setUpMetadata();
            for (int index = 0; index < bookieCount; index++) {
                cluster.bookies.add(Bookie.create(options, index,
                        dir.resolve("bookie-" + index), cluster.zk));
            }
            cluster.startBookies();
            cluster.broker = new Broker(dir.resolve("broker"), cluster.zk,
                    options.scenarioTuning());
            long start = System.nanoTime();
            cluster.broker.start();
            cluster.brokerStartSeconds = (System.nanoTime() - start) / 1e9;
            return cluster;
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
    }

    /**
     * PulsarClusterMetadataSetup, as an operator runs it before the first bookie and broker:
     * the cluster, tenant and namespace metadata, and BookKeeper's /ledgers (INSTANCEID,
     * LAYOUT, available/).
     */
    private void setUpMetadata() throws Exception {
        long start = System.nanoTime();
        Child setup = new Child("metadata-setup", dir.resolve("metadata-setup")) {
            @Override
            List<String> command() {
                return Jvm.command(List.of("-Xmx256m"), "org.apache.pulsar.PulsarClusterMetadataSetup",
                        "--cluster", Broker.CLUSTER,
                        "--metadata-store", "zk:" + zk.connectString(),
                        "--configuration-metadata-store", "zk:" + zk.connectString(),
                        "--web-service-url", "http://127.0.0.1:8080",
                        "--broker-service-url", "pulsar://127.0.0.1:6650");
            }
        };
        setup.spawn();
        long deadline = System.currentTimeMillis() + 120_000;
        while (setup.alive()) {
            Failure.check(System.currentTimeMillis() < deadline,
                    "PulsarClusterMetadataSetup did not finish within 120 s: " + setup.logTail());
            Thread.sleep(100);
        }
        List<String> ledgers = zk.children(ZooKeeperHost.LEDGERS);
        Failure.check(ledgers.contains("available") && ledgers.contains("INSTANCEID"),
                "PulsarClusterMetadataSetup left /ledgers with " + ledgers + ": " + setup.logTail());
        ledgersAfterSetup = ledgers.stream().sorted().toList();
        metadataSetupSeconds = (System.nanoTime() - start) / 1e9;
    }

    private void startBookies() throws Exception {
        // Together: a Java bookie's JVM takes seconds to come up.
        ExecutorService starter = Executors.newFixedThreadPool(bookies.size());
        try {
            List<Future<?>> started = new ArrayList<>();
            for (Bookie bookie : bookies) {
                if (!bookie.alive()) {
                    started.add(starter.submit(() -> {
                        bookie.start();
                        return null;
                    }));
                }
            }
            for (Future<?> future : started) {
                future.get();
            }
        } finally {
            starter.shutdown();
        }
    }

    /** Restarts every bookie and the broker a scenario left dead (same ports, same data). */
    void heal() throws Exception {
        startBookies();
        if (!broker.alive()) {
            broker.waitExpired();
            broker.start();
        }
    }

    /** A new pulsar-client, closed with the cluster (or earlier by the caller). */
    PulsarClient client() throws Exception {
        PulsarClient client = PulsarClient.builder().serviceUrl(broker.serviceUrl())
                .operationTimeout(60, TimeUnit.SECONDS).build();
        closeables.add(client);
        return client;
    }

    PulsarAdmin admin() throws Exception {
        if (admin == null) {
            admin = PulsarAdmin.builder().serviceHttpUrl(broker.webUrl())
                    .readTimeout(120, TimeUnit.SECONDS).requestTimeout(120, TimeUnit.SECONDS)
                    .build();
        }
        return admin;
    }

    /** The ledger's metadata from ZooKeeper, as the broker's BookKeeper client wrote it. */
    LedgerMetadata ledger(long ledgerId) throws Exception {
        if (bookkeeper == null) {
            ClientConfiguration conf = new ClientConfiguration();
            conf.setMetadataServiceUri(zk.metadataServiceUri());
            bookkeeper = new BookKeeper(conf);
        }
        return bookkeeper.getLedgerManager().readLedgerMetadata(ledgerId).get(30, TimeUnit.SECONDS)
                .getValue();
    }

    /** Ids of the bookies in any ensemble of the ledger. */
    Set<String> bookiesOf(long ledgerId) throws Exception {
        Set<String> ids = new HashSet<>();
        for (List<BookieId> ensemble : ledger(ledgerId).getAllEnsembles().values()) {
            ensemble.forEach(id -> ids.add(id.toString()));
        }
        return ids;
    }

    Bookie byId(String id) {
        return bookies.stream().filter(b -> b.id().equals(id)).findFirst()
                .orElseThrow(() -> new Failure("no bookie with id " + id));
    }

    /** Bytes the bookies' ledger data takes on disk (Bookie.ledgerData). */
    long dataBytes() throws IOException, InterruptedException {
        List<Path> paths = new ArrayList<>();
        for (Bookie bookie : bookies) {
            paths.addAll(bookie.ledgerData());
        }
        return allocatedBytes(paths);
    }

    /**
     * `du -s -c -B1`: allocated blocks, so fallocated but unwritten space counts too. A file
     * removed meanwhile (collection running) makes du complain and exit 1; the total stands.
     */
    static long allocatedBytes(List<Path> paths) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("du", "-s", "-c", "-B1"));
        for (Path path : paths) {
            command.add(path.toString());
        }
        if (paths.isEmpty()) {
            return 0;
        }
        Process du = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String[] lines = new String(du.getInputStream().readAllBytes()).trim().split("\n");
        du.waitFor();
        String total = lines[lines.length - 1];
        Failure.check(total.endsWith("total"), "du printed no total: " + String.join(" | ", lines));
        return Long.parseLong(total.split("\\s+")[0]);
    }

    @Override
    public void close() {
        for (AutoCloseable closeable : closeables) {
            try {
                closeable.close();
            } catch (Exception e) {
                // Clients of a killed broker may fail to close; the run is over.
            }
        }
        try {
            if (admin != null) {
                admin.close();
            }
            if (bookkeeper != null) {
                bookkeeper.close();
            }
        } catch (Exception e) {
            // As above.
        }
        try {
            if (broker != null) {
                broker.stop();
            }
            for (Bookie bookie : bookies) {
                bookie.stop();
            }
            zk.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
