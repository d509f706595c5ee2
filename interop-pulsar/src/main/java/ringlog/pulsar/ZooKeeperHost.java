package ringlog.pulsar;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * A real ZooKeeper server (the zookeeper jar Pulsar bundles) in this JVM on a free loopback
 * port, plus the harness's own session, which only reads: PulsarClusterMetadataSetup creates
 * the metadata, the bookies register themselves.
 */
final class ZooKeeperHost implements AutoCloseable {
    static final String LEDGERS = "/ledgers";
    static final String AVAILABLE = LEDGERS + "/available";
    /** Sessions may last 1 to 10 s, so a SIGKILLed process's nodes expire quickly. */
    static final int TICK_TIME_MS = 500;

    private final ZooKeeperServer server;
    private final ServerCnxnFactory factory;
    private final ZooKeeper client;
    final int port;

    private ZooKeeperHost(ZooKeeperServer server, ServerCnxnFactory factory, ZooKeeper client) {
        this.server = server;
        this.factory = factory;
        this.client = client;
        this.port = factory.getLocalPort();
    }

    static ZooKeeperHost start(Path dir) throws Exception {
        ZooKeeperServer server = new ZooKeeperServer(
                dir.resolve("snapshots").toFile(), dir.resolve("log").toFile(), TICK_TIME_MS);
        InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(address, 1000);
        factory.startup(server);
        return new ZooKeeperHost(server, factory, connect("127.0.0.1:" + factory.getLocalPort()));
    }

    private static ZooKeeper connect(String connectString)
            throws IOException, InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper client = new ZooKeeper(connectString, 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        Failure.check(connected.await(10, TimeUnit.SECONDS), "cannot connect to ZooKeeper");
        return client;
    }

    String connectString() {
        return "127.0.0.1:" + port;
    }

    String metadataServiceUri() {
        return "zk+hierarchical://127.0.0.1:" + port + LEDGERS;
    }

    Stat exists(String path) throws KeeperException, InterruptedException {
        return client.exists(path, false);
    }

    List<String> children(String path) throws KeeperException, InterruptedException {
        try {
            return client.getChildren(path, false);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    /** Every ledger id with a metadata znode under /ledgers (hierarchical layout: 00/0000/L0000). */
    List<Long> ledgerIds() throws KeeperException, InterruptedException {
        List<Long> ids = new ArrayList<>();
        walk(LEDGERS, 0, ids);
        return ids;
    }

    private void walk(String path, int depth, List<Long> ids)
            throws KeeperException, InterruptedException {
        for (String child : children(path)) {
            if (child.startsWith("L") && child.length() == 5 && depth == 2) {
                ids.add(Long.parseLong(path.substring(LEDGERS.length() + 1).replace("/", "")
                        + child.substring(1)));
            } else if (depth < 2 && child.matches("[0-9]+")) {
                walk(path + "/" + child, depth + 1, ids);
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        client.close();
        factory.shutdown();
        server.shutdown();
    }
}
