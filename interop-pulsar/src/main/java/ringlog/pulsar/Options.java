package ringlog.pulsar;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Everything the suite reads from system properties (and RINGLOG_BIN), decided once at start.
 * scenarioTuning: the scenarios' settings for the broker and bookies (small ledgers rolled over
 * at once, no broker cache, small segments or entry logs collected every second or two); off
 * for the benchmark ({@link #forBenchmark}), which measures the defaults a deployment runs.
 */
record Options(String bookie, Path ringlogBinary, boolean quick, Set<String> only, Path baseDir,
        boolean keep, boolean scenarioTuning) {

    static Options fromSystemProperties() {
        String bookie = System.getProperty("bookie", "ringlog");
        Failure.check(bookie.equals("ringlog") || bookie.equals("java"),
                "-Dbookie must be ringlog or java, not " + bookie);
        boolean quick = Boolean.parseBoolean(System.getProperty("quick", "false"));
        String only = System.getProperty("only", "");
        Set<String> selected = only.isBlank() ? Set.of()
                : Arrays.stream(only.split(",")).map(String::trim).collect(Collectors.toSet());
        Path baseDir = Path.of(System.getProperty("interop.dir",
                System.getProperty("java.io.tmpdir")));
        boolean keep = Boolean.parseBoolean(System.getProperty("keep", "false"));
        return new Options(bookie, resolveRinglogBinary(), quick, selected, baseDir, keep, true);
    }

    /** The same options with the scenarios' tuning left out: every other setting a default. */
    Options forBenchmark() {
        return new Options(bookie, ringlogBinary, quick, only, baseDir, keep, false);
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
        Path here = Path.of("target", "release", "ringlog").toAbsolutePath();
        Path parent = Path.of("..", "target", "release", "ringlog").toAbsolutePath().normalize();
        return Files.exists(here) || !Files.exists(parent) ? here : parent;
    }

    boolean selected(String scenario) {
        return only.isEmpty() || only.contains(scenario);
    }

    /** Messages per scenario phase: QUICK keeps `make test` within a few minutes on 2 cores. */
    int messages(int full, int quick) {
        return this.quick ? quick : full;
    }
}
