package io.tensorsocket.cli;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Builds the command line that starts another {@code tensorsocket} JVM like this one: the same Java, the JVM options
 * every launcher passes, this JVM's class path and, where this JVM started from the ahead-of-time cache, that cache.
 * Like {@code bin/tensorsocket} and the wheel's launcher, it adds the options in {@code TENSORSOCKET_JAVA_OPTS}.
 *
 * <p>Two system properties override what this JVM has, for a JVM that is not itself started as the launchers start
 * one (the process tests' JVM): {@code tensorsocket.launch.classPath} (the packaged jar and its libraries) and
 * {@code tensorsocket.launch.aotCache} (the cache the build made for that class path, used where it exists).
 */
final class Launcher {
    static final String CLASS_PATH_PROPERTY = "tensorsocket.launch.classPath";
    static final String AOT_CACHE_PROPERTY = "tensorsocket.launch.aotCache";
    private static final String AOT_CACHE_OPTION = "-XX:AOTCache=";
    private static final String JAVA_OPTS_VARIABLE = "TENSORSOCKET_JAVA_OPTS";

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
        aotCache().ifPresent(cache -> {
            cmd.add(AOT_CACHE_OPTION + cache);
            // A cache this Java or class path cannot use is passed over in silence: it only saves start-up time.
            cmd.add("-Xlog:aot*=off");
            cmd.add("-Xlog:cds*=off");
        });
        String extra = System.getenv(JAVA_OPTS_VARIABLE);
        if (extra != null && !extra.isBlank()) {
            cmd.addAll(List.of(extra.trim().split("\\s+")));
        }
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty(CLASS_PATH_PROPERTY, System.getProperty("java.class.path")));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** The ahead-of-time cache a JVM started here should use: the property's where it exists, else this JVM's. */
    static Optional<String> aotCache() {
        String configured = System.getProperty(AOT_CACHE_PROPERTY);
        if (configured != null) {
            return Files.isRegularFile(Path.of(configured)) ? Optional.of(configured) : Optional.empty();
        }
        return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith(AOT_CACHE_OPTION))
                .map(a -> a.substring(AOT_CACHE_OPTION.length()))
                .reduce((first, last) -> last);
    }
}
