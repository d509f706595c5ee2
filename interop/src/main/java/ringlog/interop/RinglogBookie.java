package ringlog.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * ringlog as a subprocess: `ringlog serve` with one shard, registering itself in ZooKeeper
 * through --zk (the zk branch). The harness never registers it on its behalf.
 */
final class RinglogBookie extends Bookie {
    private final Path binary;
    /** A scenario's extra flags, after the standard ones (a later flag wins). */
    private final List<String> flags;
    /** --data-dir: DIR/data, or a scenario's own (disk-full: a small file system). */
    private final Path dataDirectory;

    RinglogBookie(String name, Path dir, EmbeddedZooKeeper zk, Path binary, List<String> flags,
            Path dataDirectory) throws IOException {
        super(name, dir, zk);
        this.binary = binary;
        this.flags = List.copyOf(flags);
        this.dataDirectory = dataDirectory != null ? dataDirectory : dir.resolve("data");
    }

    @Override
    Path dataDirectory() {
        return dataDirectory;
    }

    @Override
    List<String> command() {
        if (!Files.isExecutable(binary)) {
            throw new Check.Failure("no ringlog binary at " + binary
                    + ": run `cargo build --release -p server` or set RINGLOG_BIN / -Dringlog.bin");
        }
        List<String> command = new ArrayList<>(List.of(binary.toString(), "serve",
                "--data-dir", dataDirectory().toString(),
                "--listen", id(),
                // Every bookie of a cluster runs on one host: an ephemeral HTTP port each.
                "--http-listen", "127.0.0.1:0",
                "--shards", "1",
                "--zk", zk.connectString(),
                "--zk-root", EmbeddedZooKeeper.LEDGERS_ROOT,
                "--advertised-address", id()));
        command.addAll(flags);
        return command;
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
