package io.tensorsocket.cli;

import io.tensorsocket.TensorSocketException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.UncheckedIOException;

/** {@code tensorsocket}: serve a shared loader, consume from it, and try it out. */
@Command(name = "tensorsocket", mixinStandardHelpOptions = true, version = "tensorsocket 0.1.0",
        description = "Share one data loader between many training processes on this host.",
        subcommands = {ServeCommand.class, ConsumeCommand.class, TrainCommand.class, StatusCommand.class, ListCommand.class,
                CleanCommand.class, DemoCommand.class, BenchCommand.class, FlightBenchCommand.class, SoakCommand.class, JobCommand.class,
                CommandLine.HelpCommand.class})
public final class Main {

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns the exit code; errors become one line on stderr. */
    static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("tensorsocket: error: " + message(e));
            return 1;
        });
        return cli.execute(args);
    }

    private static String message(Throwable e) {
        if (e instanceof TensorSocketException || e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
            return e.getMessage();
        }
        if (e instanceof UncheckedIOException u) {
            return u.getMessage();
        }
        return e.toString();
    }
}
