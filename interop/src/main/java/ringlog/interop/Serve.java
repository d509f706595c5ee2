package ringlog.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * `make compare`'s bookie: one fresh cluster (an embedded ZooKeeper and one bookie of
 * -Dbookie, with the same settings as the bench-writes scenario) that stays up until stdin
 * closes, so tools outside this JVM (ringlog-bench) can drive the very same bookie setup.
 *
 * <p>Prints {@code READY <bookie port> <bookie pid> <zookeeper connect string>} once the bookie
 * is registered, and {@code USAGE cpu_s=<seconds> rss_peak_kib=<KiB>} of the bookie process
 * just before stopping it.
 */
final class Serve {
    private Serve() {}

    public static void main(String[] arguments) throws Exception {
        Options options = Options.fromSystemProperties();
        Files.createDirectories(options.baseDir());
        Path dir = Files.createTempDirectory(options.baseDir(), "ringlog-serve-");
        int status = 0;
        try (Cluster cluster = Cluster.start(options, dir, 1, BenchWrites.JAVA_BOOKIE_SETTINGS)) {
            Bookie bookie = cluster.bookies.get(0);
            System.out.println("READY " + bookie.port + " " + bookie.pid() + " "
                    + cluster.zk.connectString());
            System.out.flush();
            while (System.in.read() != -1) {
                // Anything on stdin is ignored; EOF means stop.
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

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
