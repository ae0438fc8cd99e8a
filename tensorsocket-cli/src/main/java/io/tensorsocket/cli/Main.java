package io.tensorsocket.cli;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code tensorsocket}: serve a shared loader, consume from it, and try it out. */
@Command(
        name = "tensorsocket",
        mixinStandardHelpOptions = true,
        versionProvider = VersionInfo.class,
        description = "Share one data loader between many training processes on this host.")
public final class Main {

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** The commands, in the order the help lists them. */
    private static final List<Class<?>> COMMANDS = List.of(
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
            CommandLine.HelpCommand.class);

    /** Runs the command line and returns the exit code; errors become one line on stderr. */
    static int run(String... args) {
        CommandLine cli = commandLine(args.length == 0 ? "" : args[0]);
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

    /**
     * The command line for arguments whose first is {@code first}: with only that command where it names one, all
     * of them otherwise (help, a mistyped command's suggestions). Picocli reads every command's options by
     * reflection when it is added, and its classes are too old for the ahead-of-time cache: a producer started by a
     * feeder waits for it, so the command run is the only one read.
     */
    static CommandLine commandLine(String first) {
        CommandLine cli = new CommandLine(new Main());
        for (Class<?> command : COMMANDS) {
            Command named = command.getAnnotation(Command.class);
            if (named.name().equals(first) && !first.equals("help")) {
                return cli.addSubcommand(command);
            }
        }
        COMMANDS.forEach(command -> cli.addSubcommand(command));
        return cli;
    }
}
