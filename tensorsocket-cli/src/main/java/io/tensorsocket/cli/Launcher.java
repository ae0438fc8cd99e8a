package io.tensorsocket.cli;

import java.util.ArrayList;
import java.util.List;

/** Builds the command line that starts another {@code tensorsocket} JVM like this one. */
final class Launcher {
    private Launcher() {}

    static List<String> javaCommand(String... args) {
        return javaCommand(List.of(), args);
    }

    /** The same, with extra JVM options (for example a quieter log level) before the main class. */
    static List<String> javaCommand(List<String> jvmOptions, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        // Arrow Flight (remote consumers, relays) reads direct buffers' addresses reflectively and
        // needs Netty's sun.misc.Unsafe memory access.
        cmd.add("--add-opens=java.base/java.nio=ALL-UNNAMED");
        cmd.add("--sun-misc-unsafe-memory-access=allow");
        cmd.add("-Dio.netty.tryReflectionSetAccessible=true");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of(args));
        return cmd;
    }
}
