package ringlog.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** CPU time and memory of a process, read from /proc (Linux only; clock ticks assumed 100/s). */
record ProcessUsage(double cpuSeconds, long rssPeakKib, long rssKib) {
    private static final double CLOCK_TICKS_PER_SECOND = 100.0;

    static ProcessUsage read(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        long peak = 0;
        long rss = 0;
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("VmHWM:")) {
                peak = kib(line);
            } else if (line.startsWith("VmRSS:")) {
                rss = kib(line);
            }
        }
        return new ProcessUsage(ticks / CLOCK_TICKS_PER_SECOND, peak, rss);
    }

    private static long kib(String line) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }

    ProcessUsage since(ProcessUsage before) {
        return new ProcessUsage(cpuSeconds - before.cpuSeconds, rssPeakKib, rssKib);
    }
}
