package ringlog.interop;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.data.Stat;

/**
 * One bookie subprocess on a fixed loopback port and data directory. A restart reuses both, so
 * it exercises the bookie's recovery. It is ready when its own ephemeral registration appears
 * in ZooKeeper, with a session other than the one before a kill.
 */
abstract class Bookie {
    final String name;
    final int port;
    final Path dir;
    final EmbeddedZooKeeper zk;
    private Process process;
    private long registrationOwner = -1;
    private int starts;

    Bookie(String name, Path dir, EmbeddedZooKeeper zk) throws IOException {
        this.name = name;
        this.dir = dir;
        this.zk = zk;
        this.port = freePort();
        Files.createDirectories(dir);
    }

    /** The bookie id clients see in ZooKeeper and in ledger metadata. */
    final String id() {
        return "127.0.0.1:" + port;
    }

    abstract List<String> command() throws IOException;

    /** Where the bookie keeps its ledger data (what garbage collection shrinks). */
    abstract Path dataDirectory();

    /** How long startup may take, including waiting out the registration of a killed run. */
    abstract long startTimeoutMs();

    /** A message for a process that exited before it registered, from its log. */
    abstract String diagnose(String logTail, int exitCode);

    final Path log() {
        return dir.resolve("bookie.log");
    }

    final void start() throws Exception {
        start(false);
    }

    /**
     * As start(); with `readOnlyOk` a registration under available/readonly also counts (a
     * bookie restarted on a full disk comes up read-only and still serves reads: disk-churn).
     */
    final void start(boolean readOnlyOk) throws Exception {
        starts += 1;
        ProcessBuilder builder = new ProcessBuilder(command());
        builder.redirectErrorStream(true);
        builder.redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
        process = builder.start();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startTimeoutMs());
        while (System.nanoTime() < deadline) {
            Stat stat = zk.registration(id());
            if (readOnlyOk && (stat == null || stat.getEphemeralOwner() == registrationOwner)) {
                stat = zk.readOnlyRegistration(id());
            }
            if (stat != null && stat.getEphemeralOwner() != registrationOwner) {
                registrationOwner = stat.getEphemeralOwner();
                return;
            }
            if (!process.isAlive()) {
                throw new Check.Failure(name + " exited with status " + process.exitValue()
                        + " before registering: " + diagnose(logTail(), process.exitValue()));
            }
            Thread.sleep(50);
        }
        throw new Check.Failure(name + " did not register " + EmbeddedZooKeeper.AVAILABLE + "/"
                + id() + " within " + startTimeoutMs() + " ms (start " + starts + "); log "
                + log() + ": " + logTail());
    }

    /** SIGKILL: nothing flushed or closed; its ZooKeeper node lingers until the session expires. */
    final void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    /** SIGTERM, then SIGKILL if it has not exited within 15 s. */
    final void stop() throws InterruptedException {
        if (process == null || !process.isAlive()) {
            return;
        }
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    /** True while the process started last is running (disk-full: no restart happened). */
    final boolean alive() {
        return process != null && process.isAlive();
    }

    final long pid() {
        return process.pid();
    }

    /** CPU seconds (user + system) and peak RSS of the running process, from /proc. */
    final ProcessUsage usage() throws IOException {
        return ProcessUsage.read(process.pid());
    }

    final String logTail() {
        try {
            List<String> lines = Files.readAllLines(log(), StandardCharsets.UTF_8).stream()
                    .filter(line -> !line.isBlank()).toList();
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 8), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static final java.util.concurrent.atomic.AtomicInteger NEXT_PORT =
            new java.util.concurrent.atomic.AtomicInteger();
    private static final int PORT_LOW = 10_000;

    /**
     * A port free now and below the kernel's ephemeral range: a bookie keeps its port across
     * restarts, and a port the kernel hands out for `:0` (another bookie's HTTP port) or for a
     * client's connection could otherwise take it while the bookie is down or not yet bound.
     */
    static int freePort() throws IOException {
        int high = ephemeralLow();
        int span = high - PORT_LOW;
        int start = (int) (ProcessHandle.current().pid() * 7919 % span);
        for (int attempt = 0; attempt < span; attempt++) {
            int port = PORT_LOW + Math.floorMod(start + NEXT_PORT.getAndIncrement(), span);
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException inUse) {
                // Taken: the next one.
            }
        }
        throw new IOException("no free port in " + PORT_LOW + ".." + high);
    }

    /** The low end of the kernel's ephemeral port range (32768 when unreadable). */
    private static int ephemeralLow() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"));
            int low = Integer.parseInt(range.trim().split("\\s+")[0]);
            return Math.max(low, PORT_LOW + 1_000);
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }
}
