package ringlog.interop;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * A real ZooKeeper server in this JVM on a free loopback port, plus the harness's own session,
 * used only to create the three parent znodes and to watch bookie registrations (never to
 * register a bookie on its behalf).
 */
final class EmbeddedZooKeeper implements AutoCloseable {
    static final String LEDGERS_ROOT = "/ledgers";
    static final String AVAILABLE = LEDGERS_ROOT + "/available";
    static final String READONLY = AVAILABLE + "/readonly";
    /** Sessions may last 2 to 20 ticks: 1 s to 10 s, so a SIGKILLed bookie expires within 10 s. */
    static final int TICK_TIME_MS = 500;

    private final ZooKeeperServer server;
    private final ServerCnxnFactory factory;
    private final ZooKeeper client;
    final int port;

    private EmbeddedZooKeeper(ZooKeeperServer server, ServerCnxnFactory factory, ZooKeeper client) {
        this.server = server;
        this.factory = factory;
        this.client = client;
        this.port = factory.getLocalPort();
    }

    static EmbeddedZooKeeper start(Path dir) throws Exception {
        ZooKeeperServer server = new ZooKeeperServer(
                dir.resolve("snapshots").toFile(), dir.resolve("log").toFile(), TICK_TIME_MS);
        InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(address, 1000);
        factory.startup(server);
        ZooKeeper client = connect("127.0.0.1:" + factory.getLocalPort());
        EmbeddedZooKeeper zk = new EmbeddedZooKeeper(server, factory, client);
        // What metaformat and LocalBookKeeper create; the client fails without readonly.
        for (String path : List.of(LEDGERS_ROOT, AVAILABLE, READONLY)) {
            client.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        }
        return zk;
    }

    private static ZooKeeper connect(String connectString)
            throws IOException, InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper client = new ZooKeeper(connectString, 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        Check.that(connected.await(10, TimeUnit.SECONDS), "cannot connect to ZooKeeper");
        return client;
    }

    String connectString() {
        return "127.0.0.1:" + port;
    }

    String metadataServiceUri() {
        return "zk+hierarchical://127.0.0.1:" + port + LEDGERS_ROOT;
    }

    /** The registration of a writable bookie, or null while it is absent. */
    Stat registration(String bookieId) throws KeeperException, InterruptedException {
        return client.exists(AVAILABLE + "/" + bookieId, false);
    }

    /** The registration of a read-only bookie, or null while it is absent. */
    Stat readOnlyRegistration(String bookieId) throws KeeperException, InterruptedException {
        return client.exists(READONLY + "/" + bookieId, false);
    }

    List<String> available() throws KeeperException, InterruptedException {
        return client.getChildren(AVAILABLE, false);
    }

    @Override
    public void close() throws InterruptedException {
        client.close();
        factory.shutdown();
        server.shutdown();
    }
}
