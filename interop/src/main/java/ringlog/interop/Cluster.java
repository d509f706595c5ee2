package ringlog.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.conf.ClientConfiguration;

/**
 * One scenario's world: a fresh in-process ZooKeeper and N fresh bookies, so that a killed
 * bookie's lingering registration never leaks into the next scenario.
 */
final class Cluster implements AutoCloseable {
    final EmbeddedZooKeeper zk;
    final List<Bookie> bookies = new ArrayList<>();
    private final List<BookKeeper> clients = new ArrayList<>();

    private Cluster(EmbeddedZooKeeper zk) {
        this.zk = zk;
    }

    static Cluster start(Options options, Path dir, int bookieCount,
            Map<String, String> javaSettings) throws Exception {
        Cluster cluster = new Cluster(EmbeddedZooKeeper.start(dir.resolve("zookeeper")));
        try {
            for (int index = 0; index < bookieCount; index++) {
                cluster.bookies.add(newBookie(options, dir.resolve("bookie-" + index), cluster.zk,
                        "bookie-" + index, javaSettings));
            }
            // Start them together: a Java bookie's JVM takes seconds to come up.
            ExecutorService starter = Executors.newFixedThreadPool(bookieCount);
            List<Future<?>> started = new ArrayList<>();
            for (Bookie bookie : cluster.bookies) {
                started.add(starter.submit(() -> {
                    bookie.start();
                    return null;
                }));
            }
            starter.shutdown();
            for (Future<?> future : started) {
                future.get();
            }
            Check.equal(bookieCount + 1, cluster.zk.available().size(),
                    "children of " + EmbeddedZooKeeper.AVAILABLE + " (bookies + readonly)");
            return cluster;
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
    }

    /**
     * A scenario's settings: keys starting with "--" are ringlog flags (its `--FLAG VALUE`),
     * the others Java bookie conf keys; each bookie gets only its own. "--data-dir" replaces
     * ringlog's data directory instead of being added (clap refuses a flag given twice).
     */
    static Bookie newBookie(Options options, Path dir, EmbeddedZooKeeper zk, String name,
            Map<String, String> settings) throws Exception {
        Map<String, String> javaSettings = new LinkedHashMap<>();
        List<String> ringlogFlags = new ArrayList<>();
        Path[] dataDirectory = new Path[1];
        settings.forEach((key, value) -> {
            if (key.equals("--data-dir")) {
                dataDirectory[0] = Path.of(value);
            } else if (key.startsWith("--")) {
                ringlogFlags.add(key);
                ringlogFlags.add(value);
            } else {
                javaSettings.put(key, value);
            }
        });
        return options.bookie().equals("java")
                ? new JavaBookie(name, dir, zk, javaSettings)
                : new RinglogBookie(name, dir, zk, options.ringlogBinary(), ringlogFlags,
                        dataDirectory[0]);
    }

    /** A client with the default configuration plus the given changes; closed with the cluster. */
    BookKeeper client(Consumer<ClientConfiguration> changes) throws Exception {
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri(zk.metadataServiceUri());
        changes.accept(conf);
        BookKeeper client = new BookKeeper(conf);
        clients.add(client);
        return client;
    }

    /** The v2 client as Pulsar configures it: v2 wire protocol, 16 channels, digest autodetect. */
    static void pulsarLike(ClientConfiguration conf) {
        conf.setUseV2WireProtocol(true);
        conf.setNumChannelsPerBookie(16);
        conf.setEnableDigestTypeAutodetection(true);
    }

    Bookie byId(String id) {
        for (Bookie bookie : bookies) {
            if (bookie.id().equals(id)) {
                return bookie;
            }
        }
        throw new Check.Failure("no bookie with id " + id);
    }

    @Override
    public void close() {
        for (BookKeeper client : clients) {
            try {
                client.close();
            } catch (Exception e) {
                // A client whose bookies were killed may fail to close; the scenario already ended.
            }
        }
        for (Bookie bookie : bookies) {
            try {
                bookie.stop();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            zk.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
