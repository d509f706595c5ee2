package ringlog.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

/** Everything the suite reads from system properties (and RINGLOG_BIN), decided once at start. */
record Options(String bookie, Path ringlogBinary, boolean quick, int benchSeconds,
        Set<String> only, Path baseDir, boolean keep, Path diskFullDir) {

    static Options fromSystemProperties() {
        String bookie = System.getProperty("bookie", "ringlog");
        Check.that(bookie.equals("ringlog") || bookie.equals("java"),
                "-Dbookie must be ringlog or java, not " + bookie);
        boolean quick = Boolean.parseBoolean(System.getProperty("quick", "false"));
        int benchSeconds = Integer.parseInt(System.getProperty("bench.time", quick ? "5" : "20"));
        String only = System.getProperty("only", "");
        Set<String> selected = only.isBlank() ? Set.of()
                : Arrays.stream(only.split(",")).map(String::trim).collect(Collectors.toSet());
        Path baseDir = Path.of(System.getProperty("interop.dir",
                System.getProperty("java.io.tmpdir")));
        boolean keep = Boolean.parseBoolean(System.getProperty("keep", "false"));
        // disk-full's small file system, which scripts/disk_full.sh mounts (it needs root).
        String diskFull = System.getProperty("diskfull.dir", "");
        Path diskFullDir = diskFull.isBlank() ? null : Path.of(diskFull).toAbsolutePath();
        return new Options(bookie, resolveRinglogBinary(), quick, benchSeconds, selected, baseDir,
                keep, diskFullDir);
    }

    /** -Dringlog.bin, else RINGLOG_BIN, else target/release/ringlog in the repo root. */
    private static Path resolveRinglogBinary() {
        String property = System.getProperty("ringlog.bin");
        if (property != null && !property.isBlank()) {
            return Path.of(property).toAbsolutePath();
        }
        String environment = System.getenv("RINGLOG_BIN");
        if (environment != null && !environment.isBlank()) {
            return Path.of(environment).toAbsolutePath();
        }
        // Run from the repo root (make interop) or from interop/ (mvn users).
        Path here = Path.of("target", "release", "ringlog").toAbsolutePath();
        Path parent = Path.of("..", "target", "release", "ringlog").toAbsolutePath().normalize();
        return Files.exists(here) || !Files.exists(parent) ? here : parent;
    }

    boolean selected(String scenario) {
        return only.isEmpty() || only.contains(scenario);
    }
}
