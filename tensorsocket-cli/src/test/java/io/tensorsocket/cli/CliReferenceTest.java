package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * docs/reference/cli.md is the help of every command, rendered from the picocli definitions: the reference cannot
 * drift from the command line. Run with {@code -Dtensorsocket.writeVectors=true} to rewrite it after changing an
 * option or a description (the same switch rewrites the test vectors).
 */
class CliReferenceTest {
    private static final int WIDTH = 110;

    static String render() {
        CommandLine root = Main.commandLine("");
        StringBuilder md = new StringBuilder("""
                # Command-line reference

                <!-- Generated from the picocli definitions by CliReferenceTest; do not edit by hand. Rewrite with
                     ./mvnw -pl tensorsocket-cli test -Dtest=CliReferenceTest -Dtensorsocket.writeVectors=true -->

                `tensorsocket` is `bin/tensorsocket` in a checkout and the `tensorsocket` command of the pip wheel. Every
                command prints this help with `--help`; `tensorsocket help COMMAND` does the same.

                """);
        List<CommandLine> commands = new ArrayList<>();
        commands.add(root);
        root.getSubcommands().forEach((name, sub) -> {
            if (!name.equals("help") && !sub.getCommandSpec().usageMessage().hidden()) {
                commands.add(sub); // a hidden command (the AOT cache's training run) is the build's, not users'
            }
        });
        for (CommandLine c : commands) {
            md.append("* [`")
                    .append(c.getCommandSpec().qualifiedName())
                    .append("`](#")
                    .append(c.getCommandSpec().qualifiedName().replace(' ', '-'))
                    .append(")\n");
        }
        for (CommandLine c : commands) {
            c.getCommandSpec().usageMessage().autoWidth(false).width(WIDTH);
            md.append("\n## ")
                    .append(c.getCommandSpec().qualifiedName())
                    .append("\n\n```\n")
                    .append(c.getUsageMessage(CommandLine.Help.Ansi.OFF).stripTrailing())
                    .append("\n```\n");
        }
        return md.toString();
    }

    static Path reference() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs/reference"))) {
                return p.resolve("docs/reference/cli.md");
            }
        }
        throw new AssertionError("docs/reference not found above " + Path.of("").toAbsolutePath());
    }

    @Test
    void theReferenceIsTheHelpOfEveryCommand() throws IOException {
        String rendered = render();
        Path file = reference();
        if (Boolean.getBoolean("tensorsocket.writeVectors")) {
            Files.writeString(file, rendered, StandardCharsets.UTF_8);
        }
        assertTrue(Files.exists(file), file + " is missing; write it with -Dtensorsocket.writeVectors=true");
        assertEquals(
                rendered,
                Files.readString(file, StandardCharsets.UTF_8),
                file + " is not the commands' help;"
                        + " rewrite it with ./mvnw -pl tensorsocket-cli test -Dtest=CliReferenceTest -Dtensorsocket.writeVectors=true");
    }
}
