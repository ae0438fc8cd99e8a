package io.tensorsocket.cli;

import io.tensorsocket.arena.BulkCopy;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * What {@code tensorsocket --version} prints: this version, the Java runtime it runs on and why that one,
 * whether the optional DJL part is installed, and how large batches are copied into slots ({@link BulkCopy}: from
 * which size the C library writes past the cache, as {@code GLIBC_TUNABLES} sets it where it does; the launchers set
 * it where the C library misjudges the cache, see {@code bin/copy-tuning}). A launcher that chose the runtime says
 * why in the system property {@value #RUNTIME_PROPERTY} (the pip wheel's launcher: "bundled with the wheel" or
 * "JAVA_HOME").
 */
final class VersionInfo implements CommandLine.IVersionProvider {
    static final String VERSION = "0.1.0";
    static final String RUNTIME_PROPERTY = "tensorsocket.runtime";

    @Override
    public String[] getVersion() {
        String chosen = System.getProperty(RUNTIME_PROPERTY);
        return new String[] {
            "tensorsocket " + VERSION,
            "runtime: Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ") at "
                    + System.getProperty("java.home") + (chosen == null ? "" : ", " + chosen),
            "train and demo --model (DJL with PyTorch): " + (OptionalParts.hasDjl() ? "installed" : "not installed"),
            "large copies: " + largeCopies(System.getenv("GLIBC_TUNABLES"))
        };
    }

    static String largeCopies(String tunables) {
        if (!BulkCopy.usesCLibrary()) {
            return "the JDK's copy (this platform's C library has no memmove the JVM can call)";
        }
        Matcher m = Pattern.compile("(?:^|:)glibc\\.cpu\\.x86_non_temporal_threshold=(\\w+)")
                .matcher(tunables == null ? "" : tunables);
        return "the C library's memmove, past the cache from "
                + (m.find() ? m.group(1) + " bytes (GLIBC_TUNABLES)" : "the size the C library chose");
    }
}
