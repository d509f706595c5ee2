package ringlog.pulsar;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Commands for the JVM subprocesses: the same java and class path as this suite's JVM. */
final class Jvm {
    /** What Pulsar's bin/pulsar passes (netty and the broker's metrics reflect into the JDK). */
    private static final List<String> OPENS = List.of(
            "--add-opens", "java.base/java.io=ALL-UNNAMED",
            "--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
            "--add-opens", "java.base/sun.net=ALL-UNNAMED",
            "--add-opens", "java.management/sun.management=ALL-UNNAMED",
            "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
            "--add-opens", "java.base/java.lang=ALL-UNNAMED",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Dio.netty.tryReflectionSetAccessible=true");

    private Jvm() {}

    /** java HEAP OPENS -cp CLASSPATH -Dinterop.log.level=INFO MAIN ARGS. */
    static List<String> command(List<String> memory, String mainClass, String... arguments) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(memory);
        command.add("-XX:+UseG1GC");
        command.addAll(OPENS);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        // The log4j2.xml on the class path is silent unless this is set; subprocesses log INFO
        // into their own log file in the run directory.
        command.add("-Dinterop.log.level=INFO");
        command.add(mainClass);
        command.addAll(List.of(arguments));
        return command;
    }
}
