package io.tensorsocket.cli;

import picocli.CommandLine;

/**
 * What {@code tensorsocket --version} prints: this version, the Java runtime it runs on and why that one, and
 * whether the optional DJL part is installed. A launcher that chose the runtime says why in the system property
 * {@value #RUNTIME_PROPERTY} (the pip wheel's launcher: "bundled with the wheel" or "JAVA_HOME").
 */
final class VersionInfo implements CommandLine.IVersionProvider {
    static final String VERSION = "0.1.0";
    static final String RUNTIME_PROPERTY = "tensorsocket.runtime";

    @Override
    public String[] getVersion() {
        String chosen = System.getProperty(RUNTIME_PROPERTY);
        return new String[]{
                "tensorsocket " + VERSION,
                "runtime: Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ") at "
                        + System.getProperty("java.home") + (chosen == null ? "" : ", " + chosen),
                "train and demo --model (DJL with PyTorch): " + (OptionalParts.hasDjl() ? "installed" : "not installed")};
    }
}
