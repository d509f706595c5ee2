package ringlog.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * ringlog as a subprocess: `ringlog serve` with one shard, registering itself in ZooKeeper
 * through --zk (the zk branch). The harness never registers it on its behalf.
 */
final class RinglogBookie extends Bookie {
    private final Path binary;

    RinglogBookie(String name, Path dir, EmbeddedZooKeeper zk, Path binary) throws IOException {
        super(name, dir, zk);
        this.binary = binary;
    }

    @Override
    List<String> command() {
        if (!Files.isExecutable(binary)) {
            throw new Check.Failure("no ringlog binary at " + binary
                    + ": run `cargo build --release -p server` or set RINGLOG_BIN / -Dringlog.bin");
        }
        return List.of(binary.toString(), "serve",
                "--data-dir", dir.resolve("data").toString(),
                "--listen", id(),
                "--shards", "1",
                "--zk", zk.connectString(),
                "--zk-root", EmbeddedZooKeeper.LEDGERS_ROOT,
                "--advertised-address", id());
    }

    @Override
    long startTimeoutMs() {
        // Up to the 10 s maximum session of this ZooKeeper for a killed run's node to expire.
        return 30_000;
    }

    @Override
    String diagnose(String logTail, int exitCode) {
        if (logTail.contains("--zk") || logTail.contains("--advertised-address")) {
            return "this ringlog does not understand --zk/--zk-root/--advertised-address, so it"
                    + " cannot register in ZooKeeper and the client cannot find it (ZooKeeper"
                    + " registration is the zk branch); its output: " + logTail;
        }
        return logTail;
    }
}
