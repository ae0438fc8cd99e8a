package io.tensorsocket.cli;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.directory.ProducerDirectory;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tensorsocket status NAME}: what a running producer and each of its consumers are doing, asked
 * on the producer's control socket. Refreshes in place on a terminal; {@code --once} prints one snapshot,
 * {@code --json} one JSON object per snapshot.
 */
@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description =
                "Show a running producer and its consumers (refreshing; --once for one snapshot, --json for scripts).")
final class StatusCommand implements Callable<Integer> {

    @Parameters(
            index = "0",
            arity = "0..1",
            paramLabel = "NAME",
            description =
                    "Producer name, or grpc://HOST:PORT/NAME (grpc+tls://...) for one served over Flight on another host.")
    String name;

    @Option(names = "--dir", description = "Producer directory instead of a name.")
    Path dir;

    @Option(names = "--once", description = "Print one snapshot and exit.")
    boolean once;

    @Option(names = "--json", description = "One JSON object per snapshot (with --once: exactly one line).")
    boolean json;

    @Option(
            names = "--interval-s",
            defaultValue = "1",
            description = "Seconds between refreshes (default ${DEFAULT-VALUE}).")
    double intervalS;

    @Option(
            names = "--timeout-s",
            defaultValue = "5",
            description = "Wait this long for the producer's answer (default ${DEFAULT-VALUE}).")
    double timeoutS;

    @Mixin
    RemoteClientOptions remote;

    @Override
    public Integer call() throws Exception {
        if ((name == null) == (dir == null)) {
            throw new IllegalArgumentException(
                    "give a producer NAME or --dir DIR; running: " + ProducerDirectory.liveProducers());
        }
        boolean isRemote = name != null && RemoteAccess.isRemote(name);
        Path d = dir != null ? dir : isRemote ? null : ProducerDirectory.forName(name);
        boolean tty = Terminal.isInteractive();
        PrintStream out = System.out;
        while (true) {
            Optional<FeederWaits.Waiting> waiting = d == null ? Optional.empty() : FeederWaits.of(d);
            if (waiting.isPresent()) {
                FeederWaits.Waiting w = waiting.get();
                out.println(
                        json
                                ? Json.object()
                                        .put("name", w.name())
                                        .put("pid", w.pid())
                                        .put("state", "waiting for feeder")
                                        .put("since", w.since().toString())
                                        .toString()
                                : "producer " + w.name() + "  pid " + (w.pid().isEmpty() ? "?" : w.pid()) + "  "
                                        + w.state()
                                        + "\nit serves batches from an external loader that has not declared them yet; start its feeder:"
                                        + " tensorsocket_client.TensorProducer(\"" + w.name()
                                        + "\", loader) in Python, or python3 -m"
                                        + " tensorsocket_client feed --name " + w.name() + " ...");
                out.flush();
                if (once) {
                    return 0;
                }
                Thread.sleep((long) (intervalS * 1000));
                continue;
            }
            ProducerStatus s = isRemote
                    ? RemoteAccess.status(name, remote.build(0), ServeCommand.seconds(timeoutS))
                    : TensorProducer.queryStatus(d, ServeCommand.seconds(timeoutS));
            if (json) {
                out.println(toJson(s));
            } else {
                String view = render(s);
                if (tty && !once) {
                    out.print(Terminal.HOME_AND_CLEAR);
                }
                out.print(view);
                if (!tty && !once) {
                    out.println();
                }
            }
            out.flush();
            if (once) {
                return 0;
            }
            Thread.sleep((long) (intervalS * 1000));
        }
    }

    static String render(ProducerStatus s) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(
                Locale.ROOT,
                "producer %s  pid %d  %s  up %s%n",
                s.name(),
                s.producerPid(),
                s.state().label(),
                duration(s.uptimeNanos())));
        b.append("source   ")
                .append(Terminal.wrap(s.source(), 100, "         ", 6))
                .append('\n');
        // Epochs counted from 1 here, as train prints them ("epoch 3 of 4" is the third); --json keeps the
        // protocol's numbers, counted from 0.
        String epochs = s.epochs() == 0 ? "unbounded" : Long.toString(s.epochs());
        long shown = s.epochs() == 0 ? s.epoch() + 1 : Math.min(s.epoch() + 1, s.epochs());
        b.append(String.format(
                Locale.ROOT,
                "epoch    %d of %s  %s %d/%d samples%n",
                shown,
                epochs,
                Terminal.bar(s.epochProgress(), 30),
                s.sample(),
                s.samplesPerEpoch()));
        b.append(String.format(
                Locale.ROOT,
                "loader   %.1f samples/s, %d batches of %d published (%d samples)%n",
                s.samplesPerSecond(),
                s.batchesPublished(),
                s.producerBatchSize(),
                s.samplesPublished()));
        b.append(String.format(
                Locale.ROOT,
                "arena    %d slots x %s = %s, %d in use %s; rubber band %d batches (%d retained)%n",
                s.slotCount(),
                bytes(s.slotBytes()),
                bytes(s.slotBytes() * s.slotCount()),
                s.slotsInUse(),
                Terminal.bar((double) s.slotsInUse() / s.slotCount(), 12),
                s.rubberBand(),
                s.windowBatches()));
        b.append(String.format(
                Locale.ROOT,
                "consumers %d attached%s, %d evicted since start; one joining mid-epoch starts %s%n",
                s.consumersAttached(),
                s.consumers().size() < s.consumersAttached()
                        ? " (" + s.consumers().size() + " listed)"
                        : "",
                s.evictions(),
                (s.midEpoch() == StartMode.EXACT ? "exact (each epoch one pass)" : "rolling")
                        + (s.seed() != null ? "; shuffled with seed " + s.seed() : "")));
        ProducerStatus.Cache cache = s.cache();
        if (cache.present()) {
            b.append(String.format(
                    Locale.ROOT,
                    "cache    %d of %d samples decoded and kept, %s of %s %s; %d hits, %d decodes since start%n",
                    cache.samplesHeld(),
                    cache.samples(),
                    bytes(cache.bytesHeld()),
                    bytes(cache.capacityBytes()),
                    Terminal.bar((double) cache.bytesHeld() / cache.capacityBytes(), 12),
                    cache.hits(),
                    cache.loads()));
        }
        if (!s.consumers().isEmpty()) {
            boolean jobs = s.consumers().stream().anyMatch(ProducerStatus.Consumer::inJob);
            b.append(String.format(
                    Locale.ROOT,
                    "  %4s %8s %-10s %6s %6s %12s %9s %5s %10s %7s %7s %8s %-7s %s%s%n",
                    "id",
                    "pid",
                    "user",
                    "batch",
                    "epoch",
                    "position",
                    "lag",
                    "held",
                    "samples/s",
                    "wait",
                    "work",
                    "start",
                    "handoff",
                    jobs ? String.format(Locale.ROOT, "%-16s ", "job/rank") : "",
                    "client"));
            for (ProducerStatus.Consumer c : s.consumers()) {
                double wf = c.waitFraction();
                String rank = !jobs
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                "%-16s ",
                                c.inJob() ? c.job() + " " + c.rank() + "/" + c.worldSize() : "-");
                b.append(String.format(
                        Locale.ROOT,
                        "  %4d %8d %-10s %6d %6d %12d %9d %5d %10s %7s %7s %8s %-7s %s%s%n",
                        c.id(),
                        c.pid(),
                        c.user().length() > 10 ? c.user().substring(0, 10) : c.user(),
                        c.batchSize(),
                        c.epoch() + 1,
                        c.position(),
                        c.lagSamples(),
                        c.batchesHeld(),
                        c.reported() ? String.format(Locale.ROOT, "%.1f", c.samplesPerSecond()) : "-",
                        Double.isNaN(wf) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * wf),
                        Double.isNaN(wf) ? "-" : String.format(Locale.ROOT, "%.0f%%", 100 * (1 - wf)),
                        c.startMode().label(),
                        c.handoff(),
                        rank,
                        client(c.client())
                                + (c.inLane()
                                        ? String.format(
                                                Locale.ROOT,
                                                "  in lane %d (%d samples loaded again)",
                                                c.lane(),
                                                c.laneSamples())
                                        : "")
                                + (c.setsPace()
                                        ? String.format(Locale.ROOT, "  << sets the pace (%.0f%%)", 100 * c.paceShare())
                                        : "")
                                + ending(c, s)));
            }
            b.append(
                    "  epoch: counted from 1; lag: samples the producer is ahead; wait/work: share of the consumer's time spent waiting for data vs training\n");
            if (jobs) {
                b.append("  job/rank: a data-parallel job's ranks share each epoch (rank/world size)\n");
            }
            if (s.consumers().stream().anyMatch(ProducerStatus.Consumer::inLane)) {
                b.append("  in lane: it fell behind the others, so the producer loads its batches again at its pace"
                        + " rather than hold the others back\n");
            }
            if (s.consumers().stream().anyMatch(ProducerStatus.Consumer::setsPace)) {
                b.append("  sets the pace: the producer spent that share of its last 10 s waiting for this consumer to"
                        + " release batches, so the others read at its speed, not their own\n");
            }
        }
        return b.toString();
    }

    /** A remote consumer's peer as is; a local one's command cut to the program's name ({@code java}, {@code python3}). */
    static String client(String client) {
        if (client.startsWith(ConsumerOptions.REMOTE_CLIENT_PREFIX)) {
            return client;
        }
        String first = client.split(" ", 2)[0];
        String program = first.substring(first.lastIndexOf('/') + 1);
        return program.length() > 24 ? program.substring(0, 24) : program;
    }

    static String toJson(ProducerStatus s) {
        StringBuilder consumers = new StringBuilder("[");
        for (ProducerStatus.Consumer c : s.consumers()) {
            if (consumers.length() > 1) {
                consumers.append(", ");
            }
            consumers.append(Json.object()
                    .put("id", c.id())
                    .put("pid", c.pid())
                    .put("user", c.user())
                    .put("batch_size", c.batchSize())
                    .put("drop_last", c.dropLast())
                    .put("start", c.startMode().label())
                    .put("epoch", c.epoch())
                    .put("position", c.position())
                    .put("lag_samples", c.lagSamples())
                    .put("batches_held", c.batchesHeld())
                    .put("batches_sent", c.batchesSent())
                    .put("reported", c.reported())
                    .put("samples", c.samplesConsumed())
                    .put("samples_per_s", c.samplesPerSecond())
                    .put("wait_s", c.waitNanos() / 1e9)
                    .put("work_s", c.workNanos() / 1e9)
                    .put("connected_s", c.connectedNanos() / 1e9)
                    .put("client", c.client())
                    .put("handoff", c.handoff())
                    .put("job", c.inJob() ? c.job() : null)
                    .put("rank", c.rank())
                    .put("world_size", c.worldSize())
                    .put("pace_share", c.paceShare())
                    .put("sets_pace", c.setsPace())
                    .put("lane", c.lane())
                    .put("lane_samples", c.laneSamples())
                    .put("stream_end", c.streamEnd() < 0 ? null : c.streamEnd())
                    .put("samples_left", c.samplesLeft() < 0 ? null : c.samplesLeft())
                    .put("resuming", c.resuming()));
        }
        consumers.append(']');
        return Json.object()
                .put("name", s.name())
                .put("pid", s.producerPid())
                .put("state", s.state().label())
                .put("source", s.source())
                .put("batch_size", s.producerBatchSize())
                .put("samples_per_epoch", s.samplesPerEpoch())
                .put("epochs", s.epochs())
                .put("epoch", s.epoch())
                .put("sample", s.sample())
                .put("batches_published", s.batchesPublished())
                .put("samples_published", s.samplesPublished())
                .put("samples_per_s", s.samplesPerSecond())
                .put("slots", s.slotCount())
                .put("slot_bytes", s.slotBytes())
                .put("arena_bytes", s.slotBytes() * s.slotCount())
                .put("slots_in_use", s.slotsInUse())
                .put("rubber_band", s.rubberBand())
                .put("window_batches", s.windowBatches())
                .put("uptime_s", s.uptimeNanos() / 1e9)
                .put("consumers_attached", s.consumersAttached())
                .put("evictions", s.evictions())
                .put("mid_epoch", s.midEpoch().label())
                .put("seed", s.seed())
                .putRaw("cache", cacheJson(s.cache()))
                .putRaw("consumers", consumers.toString())
                .toString();
    }

    /** The cache's figures as a JSON object, or null where the source has no cache. */
    private static String cacheJson(ProducerStatus.Cache c) {
        return !c.present()
                ? "null"
                : Json.object()
                        .put("capacity_bytes", c.capacityBytes())
                        .put("bytes", c.bytesHeld())
                        .put("samples_held", c.samplesHeld())
                        .put("samples", c.samples())
                        .put("hits", c.hits())
                        .put("loads", c.loads())
                        .toString();
    }

    static String bytes(long n) {
        if (n >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", n / (double) (1L << 30));
        }
        if (n >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", n / (double) (1L << 20));
        }
        return String.format(Locale.ROOT, "%.1f KiB", n / 1024.0);
    }

    static String duration(long nanos) {
        long s = nanos / 1_000_000_000L;
        return s >= 3600
                ? String.format("%dh%02dm", s / 3600, s / 60 % 60)
                : s >= 60 ? String.format("%dm%02ds", s / 60, s % 60) : s + "s";
    }

    static ProducerStatus tryQuery(Path dir) {
        try {
            return TensorProducer.queryStatus(dir, Duration.ofSeconds(2));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Where the consumer's stream ends, once it does: the rest of an epoch it resumes from a checkpoint, or the end of
     * the last epoch a finite stream owes it (past the stream's end for one that joined mid-epoch: its tail).
     */
    private static String ending(ProducerStatus.Consumer c, ProducerStatus s) {
        if (c.streamEnd() < 0) {
            return "";
        }
        if (c.resuming()) {
            return String.format(
                    Locale.ROOT,
                    "  resuming its epoch: %d samples left, to stream position %d",
                    c.samplesLeft(),
                    c.streamEnd());
        }
        long end = s.epochs() * s.samplesPerEpoch();
        return String.format(
                Locale.ROOT,
                "  its stream ends in %d samples, at stream position %d%s",
                c.samplesLeft(),
                c.streamEnd(),
                c.streamEnd() > end
                        ? " (its last epoch's tail: " + (c.streamEnd() - end) + " samples loaded again)"
                        : "");
    }
}
