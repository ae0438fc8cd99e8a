package io.tensorsocket.cli;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.directory.ShareFiles;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tensorsocket list}: the producers running for this user, one line each. */
@Command(
        name = "list",
        mixinStandardHelpOptions = true,
        description = "List the producers running for this user (also those waiting for their feeder), and the files of"
                + " dead ones that `clean` would free.")
final class ListCommand implements Callable<Integer> {

    @Option(names = "--json", description = "One JSON object per producer (stale ones with \"state\": \"stale\").")
    boolean json;

    @Override
    public Integer call() {
        List<String> names = ProducerDirectory.liveProducers();
        List<StaleProducers.Stale> stale = StaleProducers.find();
        List<FeederWaits.Waiting> waiting = FeederWaits.find();
        if (names.isEmpty() && waiting.isEmpty() && !json) {
            System.out.println("no producers running in " + ProducerDirectory.baseDirectory());
        } else if (!json) {
            System.out.printf(
                    "%-24s %8s %-22s %9s %7s %12s%n", "name", "pid", "state", "consumers", "epoch", "samples/s");
        }
        for (String n : names) {
            ProducerStatus s =
                    StatusCommand.tryQuery(ProducerDirectory.baseDirectory().resolve(n));
            if (json) {
                System.out.println(
                        s == null
                                ? Json.object().put("name", n).put("state", "not answering")
                                : Json.object()
                                        .put("name", n)
                                        .put("pid", s.producerPid())
                                        .put("state", s.state().label())
                                        .put("consumers", s.consumersAttached())
                                        .put("epoch", s.epoch())
                                        .put("samples_per_s", s.samplesPerSecond())
                                        .put("source", s.source()));
            } else if (s == null) {
                System.out.printf("%-24s %8s %-22s%n", n, "?", "not answering");
            } else {
                System.out.printf(
                        Locale.ROOT,
                        "%-24s %8d %-22s %9d %7d %12.1f%n",
                        n,
                        s.producerPid(),
                        s.state().label(),
                        s.consumersAttached(),
                        s.epoch(),
                        s.samplesPerSecond());
            }
        }
        for (FeederWaits.Waiting w : waiting) {
            if (json) {
                System.out.println(Json.object()
                        .put("name", w.name())
                        .put("pid", w.pid())
                        .put("state", "waiting for feeder")
                        .put("since", w.since().toString())
                        .put("dir", w.dir().toString()));
            } else {
                System.out.printf("%-24s %8s %s%n", w.name(), w.pid().isEmpty() ? "?" : w.pid(), w.state());
            }
        }
        if (json) {
            for (StaleProducers.Stale d : stale) {
                System.out.println(Json.object()
                        .put("name", d.name())
                        .put("state", "stale")
                        .put("pid", d.pid())
                        .put("bytes", d.bytes())
                        .put("dir", d.dir().toString()));
            }
        } else if (!stale.isEmpty()) {
            long total = stale.stream().mapToLong(StaleProducers.Stale::bytes).sum();
            System.out.println();
            System.out.println(
                    stale.size() == 1
                            ? "1 stale producer directory (its producer died without cleaning up) holds "
                                    + StaleProducers.size(total) + ":"
                            : stale.size()
                                    + " stale producer directories (their producers died without cleaning up) hold "
                                    + StaleProducers.size(total) + ":");
            for (StaleProducers.Stale d : stale) {
                System.out.printf(
                        Locale.ROOT,
                        "  %-24s %8s %10s  %s%n",
                        d.name(),
                        d.pid().isEmpty() ? "?" : d.pid(),
                        StaleProducers.size(d.bytes()),
                        d.dir());
            }
            System.out.println("free them with: " + Hints.launcher() + " clean");
        }
        List<String> shares = ShareFiles.leftBehind();
        for (String share : shares) {
            Path log = ShareFiles.logFile(share);
            if (json) {
                System.out.println(Json.object()
                        .put("name", share)
                        .put("state", "share files left")
                        .put("log", log.toString()));
            }
        }
        if (!json && !shares.isEmpty()) {
            System.out.println();
            System.out.println("shares whose last start failed or whose producer was killed left their lock and log"
                    + " (the log says what happened; the next start of the name or `" + Hints.launcher() + " clean`"
                    + " removes them):");
            for (String share : shares) {
                System.out.printf("  %-24s %s%n", share, ShareFiles.logFile(share));
            }
        }
        return 0;
    }
}
