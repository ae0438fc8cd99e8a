package io.tensorsocket.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code tensorsocket}: serve a shared loader, consume from it, and try it out. */
@Command(
        name = "tensorsocket",
        mixinStandardHelpOptions = true,
        versionProvider = VersionInfo.class,
        description = "Share one data loader between many training processes on this host.",
        subcommands = {
            ServeCommand.class,
            AotTrainingCommand.class,
            ConsumeCommand.class,
            TrainCommand.class,
            StatusCommand.class,
            ListCommand.class,
            CleanCommand.class,
            DemoCommand.class,
            BenchCommand.class,
            FlightBenchCommand.class,
            SoakCommand.class,
            JobCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main {

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns the exit code; errors become one line on stderr. */
    static int run(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("tensorsocket: error: " + ErrorMessages.of(e));
            if (Boolean.getBoolean("tensorsocket.debug")) {
                e.printStackTrace(cmd.getErr());
            }
            return 1;
        });
        // A mistyped option gets its error and where to read more, not a screen of usage that scrolls it away.
        cli.setParameterExceptionHandler((e, rest) -> {
            CommandLine cmd = e.getCommandLine();
            cmd.getErr().println("tensorsocket: error: " + e.getMessage());
            CommandLine.UnmatchedArgumentException.printSuggestions(e, cmd.getErr());
            String sub = cmd.getCommandSpec()
                    .qualifiedName()
                    .replaceFirst("^\\S+", "")
                    .strip();
            cmd.getErr()
                    .println(
                            "run '" + Hints.launcher() + (sub.isEmpty() ? "" : " " + sub) + " --help' for the options");
            return 2;
        });
        return cli.execute(args);
    }
}
