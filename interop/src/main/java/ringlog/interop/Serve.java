package ringlog.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * `make compare`'s bookie: one fresh cluster (an embedded ZooKeeper and one bookie of
 * -Dbookie, with the same settings as the bench-writes scenario) that stays up until stdin
 * closes, so tools outside this JVM (ringlog-bench) can drive the very same bookie setup.
 *
 * <p>With {@code -Dserve.tls.dir=DIR} (certificates made by scripts/tls_certs.sh) the bookie
 * speaks TLS after START_TLS and requires a client certificate signed by DIR/ca.pem.
 *
 * <p>Prints {@code READY <bookie port> <bookie pid> <zookeeper connect string>} once the bookie
 * is registered, and {@code USAGE cpu_s=<seconds> rss_peak_kib=<KiB>} of the bookie process
 * just before stopping it.
 *
 * <p>A line {@code RESTART} on stdin stops the bookie (SIGTERM: the Java bookie flushes its
 * write cache and closes its ledger storage, ringlog drains and exits; SIGKILL only if it
 * has not exited within 15 s) and starts it again on the same port, data directory and
 * settings, as the interop scenarios' restarts do; then prints
 * {@code RESTARTED <bookie port> <bookie pid> stop_s=<seconds> start_s=<seconds>}. The
 * catch-up read workload of `make compare` reads after such a restart, so nothing it reads is
 * still in the bookie's memory. Other lines are ignored.
 */
final class Serve {
    private Serve() {}

    public static void main(String[] arguments) throws Exception {
        Options options = Options.fromSystemProperties();
        Files.createDirectories(options.baseDir());
        Path dir = Files.createTempDirectory(options.baseDir(), "ringlog-serve-");
        int status = 0;
        // -Dserve.tls.dir=DIR (certificates of scripts/tls_certs.sh): the bookie speaks TLS
        // with client authentication, the same settings for both kinds (Tls.bookieSettings).
        Map<String, String> settings = new LinkedHashMap<>(BenchWrites.JAVA_BOOKIE_SETTINGS);
        String tlsDir = System.getProperty("serve.tls.dir", "");
        if (!tlsDir.isEmpty()) {
            settings.putAll(Tls.bookieSettings(new Tls.Certificates(Path.of(tlsDir)), false,
                    false, null));
        }
        try (Cluster cluster = Cluster.start(options, dir, 1, settings)) {
            Bookie bookie = cluster.bookies.get(0);
            System.out.println("READY " + bookie.port + " " + bookie.pid() + " "
                    + cluster.zk.connectString());
            System.out.flush();
            BufferedReader input = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = input.readLine(); line != null; line = input.readLine()) {
                if (line.trim().equals("RESTART")) {
                    restart(bookie);
                }
            }
            ProcessUsage usage = bookie.usage();
            System.out.printf("USAGE cpu_s=%.2f rss_peak_kib=%d%n", usage.cpuSeconds(),
                    usage.rssPeakKib());
            System.out.flush();
        } catch (Exception e) {
            System.out.println("FAILED " + e.getMessage());
            status = 1;
        } finally {
            if (!options.keep()) {
                deleteTree(dir);
            }
        }
        System.exit(status);
    }

    /** Stops and starts `bookie` on its own data, timing both halves. */
    private static void restart(Bookie bookie) throws Exception {
        long stopStart = System.nanoTime();
        bookie.stop();
        long startStart = System.nanoTime();
        bookie.start();
        long end = System.nanoTime();
        // One println of the whole line: the script reading this output waits for whole lines.
        System.out.println(String.format("RESTARTED %d %d stop_s=%.1f start_s=%.1f", bookie.port,
                bookie.pid(), (startStart - stopStart) / 1e9, (end - startStart) / 1e9));
        System.out.flush();
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
