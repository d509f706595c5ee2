package ringlog.pulsar;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One subprocess of the cluster (bookie, broker, AutoRecovery), with its output appended to
 * DIR/NAME.log. kill() is SIGKILL (Process.destroyForcibly), stop() SIGTERM then SIGKILL.
 */
abstract class Child {
    /** Every process this JVM started, for the shutdown hook. */
    private static final java.util.Set<Process> SPAWNED =
            java.util.concurrent.ConcurrentHashMap.newKeySet();

    final String name;
    final Path dir;
    private Process process;

    Child(String name, Path dir) throws IOException {
        this.name = name;
        this.dir = dir;
        Files.createDirectories(dir);
    }

    abstract List<String> command() throws IOException;

    final Path log() {
        return dir.resolve(name + ".log");
    }

    /** Starts the process; the subclass waits for it to be ready. */
    final void spawn() throws IOException {
        ProcessBuilder builder = new ProcessBuilder(command());
        builder.redirectErrorStream(true);
        builder.redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
        process = builder.start();
        SPAWNED.add(process);
    }

    /** SIGKILL of every subprocess still running (the JVM is exiting). */
    static void killAllSpawned() {
        SPAWNED.forEach(Process::destroyForcibly);
    }

    final void checkAlive(String waitingFor) {
        if (!process.isAlive()) {
            throw new Failure(name + " exited with status " + process.exitValue() + " before "
                    + waitingFor + "; " + log() + ": " + logTail());
        }
    }

    /** SIGKILL: nothing flushed or closed; ZooKeeper nodes linger until the session expires. */
    final void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    /** SIGTERM, then SIGKILL if it has not exited within 20 s. */
    final void stop() throws InterruptedException {
        if (process == null || !process.isAlive()) {
            return;
        }
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    final boolean alive() {
        return process != null && process.isAlive();
    }

    final String logTail() {
        try {
            List<String> lines = Files.readAllLines(log(), StandardCharsets.UTF_8).stream()
                    .filter(line -> !line.isBlank()).toList();
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 6), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
