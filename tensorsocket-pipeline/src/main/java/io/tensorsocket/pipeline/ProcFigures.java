package io.tensorsocket.pipeline;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Figures the kernel writes as {@code Name:   N kB} lines in {@code /proc} files, such as {@code /proc/meminfo}. */
final class ProcFigures {
    private ProcFigures() {}

    /** Figure {@code name} of {@code file} in bytes, or -1 where the file or the figure cannot be read. */
    static long bytes(Path file, String name) {
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.startsWith(name + ":")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
