package io.tensorsocket.cli;

import io.tensorsocket.bench.Harness;
import io.tensorsocket.bench.LateJoinRun;
import io.tensorsocket.bench.ShuffleCost;
import io.tensorsocket.pipeline.Decoders;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code tensorsocket bench}: the numbers that matter, measured side by side in one run. Prints a table,
 * one JSON object per metric per line on stdout, and writes a CSV and PNG charts.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = {
            "Measure hand-off latency, fan-out to 1..16 consumers beside memory bandwidth, the speedup of a"
                    + " shared JPEG pipeline over private ones for K = 2, 3, 4, the memory each consumer adds, and what exact"
                    + " late-join epochs cost in randomness against a fresh shuffle.",
            "Prints a table and one JSON object per metric per line; writes CSV and PNG charts. --quick takes about a minute."
        })
final class BenchCommand implements Callable<Integer> {
    /** The spinning consumer polls longer than the producer's 1 ms pace, so it never sleeps between batches. */
    private static final long SPIN_MICROS = 2000;

    @Option(names = "--quick", description = "Shorter runs (about a minute); noisier.")
    boolean quick;

    @Option(
            names = "--out",
            defaultValue = "bench-results",
            description = "Folder for the CSV and charts (default ${DEFAULT-VALUE}).")
    Path out;

    @Option(
            names = "--only",
            split = ",",
            description = "Run only these: handoff, fanout, speedup, rss, shuffle, latejoin.")
    List<String> only;

    @Option(
            names = "--fanout-consumers",
            split = ",",
            defaultValue = "1,2,4,8,16",
            description = "Consumer JVM counts of the fan-out runs (default ${DEFAULT-VALUE}).")
    List<Integer> fanoutConsumers;

    @Option(
            names = "--handoff-batches",
            paramLabel = "N",
            description = "Batches measured in each hand-off run after as many to warm up (default 1000 with --quick,"
                    + " else 10000; fewer are noisier).")
    Integer handoffBatches;

    @Option(
            names = "--step-ms",
            defaultValue = "40",
            description = "Simulated accelerator time per batch in the speedup runs (default ${DEFAULT-VALUE}).")
    double stepMs;

    @Spec
    CommandSpec spec;

    private final List<Map<String, Object>> metrics = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        if (handoffBatches != null && handoffBatches < 1) {
            throw new ParameterException(spec.commandLine(), "--handoff-batches: 1 or more, not " + handoffBatches);
        }
        for (int k : fanoutConsumers) {
            if (k < 1) {
                throw new ParameterException(
                        spec.commandLine(), "--fanout-consumers: each count of consumers is 1 or more, not " + k);
            }
        }
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        Files.createDirectories(out);
        int cpus = Runtime.getRuntime().availableProcessors();
        String machine = cpus + " processors, " + Runtime.version() + ", " + System.getProperty("os.arch");
        System.out.println("# tensorsocket bench" + (quick ? " --quick" : "") + " on " + machine);
        try (ProgressBar progress = new ProgressBar(quick ? 85 : 320)) {
            if (wants("handoff")) {
                int batches = handoffBatches != null ? handoffBatches : quick ? 1000 : 10_000;
                // quick: C2 still compiles while it measures
                int warmup = handoffBatches != null ? handoffBatches : quick ? 2000 : Harness.HANDOFF_WARMUP;
                progress.phase("handoff latency, warming up the producer");
                Harness.warmProducer(warmup);
                String noPython = Harness.pythonUnavailable();
                if (noPython != null) {
                    System.err.println("SKIPPED the Python consumers' hand-off: " + noPython);
                }
                for (String consumer : noPython == null ? List.of("java", "python") : List.of("java")) {
                    for (boolean ring : new boolean[] {true, false}) {
                        for (long spin : new long[] {0, SPIN_MICROS}) {
                            if (consumer.equals("python") && !ring && spin > 0) {
                                continue; // a Python consumer spins on its ring only
                            }
                            String path = ring ? "ring" : "socket";
                            progress.phase("handoff latency, " + consumer + " consumer, " + path
                                    + (spin > 0 ? ", spinning" : ""));
                            Harness.Handoff h = Harness.handoff(warmup, batches, spin, ring, consumer.equals("python"));
                            for (String stat : List.of("p50", "p99")) {
                                metric(
                                        "handoff_us",
                                        stat.equals("p50") ? h.p50Us() : h.p99Us(),
                                        "us",
                                        "stat",
                                        stat,
                                        "path",
                                        path,
                                        "consumer",
                                        consumer,
                                        "batch",
                                        "64x3x32x32 float32",
                                        "batches",
                                        h.batches(),
                                        "warmup",
                                        warmup,
                                        "spin_us",
                                        spin);
                            }
                        }
                    }
                }
            }
            if (wants("fanout")) {
                progress.phase("memory bandwidth");
                Harness.CopyLimit before = Harness.memcpy();
                Harness.SlotCopy slotCopy = Harness.slotCopy(quick ? 40 : 200);
                double batchGb = Harness.FANOUT_BATCH_BYTES / 1e9;
                List<Harness.Fanout> fs = new ArrayList<>();
                for (int k : fanoutConsumers) {
                    progress.phase("fan-out to " + k + " consumer JVMs");
                    fs.add(Harness.fanout(k, "page", quick ? 20 : 300));
                }
                // the limit is the best this machine copied, before or after the runs (it varies from minute to minute)
                Harness.CopyLimit limit = before.best(Harness.memcpy());
                double memcpy = limit.gbPerS();
                metric(
                        "memcpy_gb_per_s",
                        memcpy,
                        "GB/s",
                        "what",
                        "native-to-native copy of 64 MiB, best of 10 before and 10"
                                + " after the fan-out runs, in 4 KiB and in 2 MiB pages, by the JDK's copy and by the C library's",
                        "small_pages_gb_per_s",
                        limit.smallPagesGbPerS(),
                        "huge_pages_gb_per_s",
                        limit.hugePagesGbPerS(),
                        "jdk_copy_gb_per_s",
                        limit.jdkCopyGbPerS(),
                        "c_library_copy_gb_per_s",
                        limit.cLibraryCopyGbPerS());
                metric(
                        "slot_copy_batches_per_s",
                        slotCopy.meanPerS(),
                        "batches/s",
                        "what",
                        "mean of " + (quick ? 40 : 200)
                                + " copies of one 64x3x224x224 float32 batch into 8 slots of a /dev/shm arena, before the fan-out runs",
                        "best_batches_per_s",
                        slotCopy.bestPerS(),
                        "of_limit",
                        slotCopy.meanPerS() / (memcpy / batchGb),
                        "beside_busy_cpu_batches_per_s",
                        slotCopy.besideBusyCpuPerS(),
                        "beside_busy_cpu_of_limit",
                        slotCopy.besideBusyCpuPerS() / (memcpy / batchGb));
                for (Harness.Fanout f : fs) {
                    metric(
                            "fanout_batches_per_s",
                            f.perConsumer(),
                            "batches/s per consumer",
                            "consumers",
                            f.consumers(),
                            "aggregate",
                            f.aggregate(),
                            "batch",
                            "64x3x224x224 float32",
                            "touch",
                            "page",
                            "memcpy_limit_batches_per_s",
                            memcpy / batchGb,
                            "of_limit",
                            f.perConsumer() / (memcpy / batchGb),
                            "of_slot_copy",
                            f.perConsumer() / slotCopy.meanPerS(),
                            "producer_claim_ms",
                            f.claimMs(),
                            "producer_copy_ms",
                            f.copyMs(),
                            "producer_publish_ms",
                            f.publishMs());
                }
                fanoutChart(fs, memcpy / batchGb);
            }
            if (wants("speedup")) {
                Path images = DemoImages.ensure(DemoImages.defaultFolder(), 500, 10);
                List<double[]> rows = new ArrayList<>();
                for (int k : List.of(2, 3, 4)) {
                    TrainingComparison.Config c = new TrainingComparison.Config(
                            images,
                            k,
                            32,
                            32,
                            stepMs,
                            quick ? 3 : 15,
                            quick ? 1 : 3,
                            cpus,
                            "auto",
                            "RandomResizedCrop(224), RandomHorizontalFlip(0.5), Normalize(imagenet)",
                            "float32",
                            42,
                            null,
                            0);
                    progress.phase("speedup K=" + k + ": private pipelines");
                    TrainingComparison.ModeResult p = TrainingComparison.runPrivate(c);
                    progress.phase("speedup K=" + k + ": shared producer");
                    TrainingComparison.ModeResult s = TrainingComparison.runShared(c);
                    double speedup = s.aggregate() / p.aggregate();
                    metric(
                            "shared_speedup",
                            speedup,
                            "x",
                            "jobs",
                            k,
                            "private_samples_per_s",
                            p.aggregate(),
                            "shared_samples_per_s",
                            s.aggregate(),
                            "private_cpu_ms_per_sample",
                            p.cpuMsPerSample(),
                            "shared_cpu_ms_per_sample",
                            s.cpuMsPerSample(),
                            "step_ms",
                            stepMs,
                            "batch",
                            32,
                            "decoder",
                            Decoders.best().name(),
                            "workers",
                            cpus,
                            "seconds",
                            c.seconds());
                    rows.add(new double[] {k, p.aggregate(), s.aggregate(), p.cpuMsPerSample(), s.cpuMsPerSample()});
                }
                speedupChart(rows);
            }
            if (wants("shuffle")) {
                progress.phase("randomness of exact late-join epochs");
                int n = 60_000;
                int batch = 64;
                ShuffleCost.Cost fresh = ShuffleCost.measure(n, batch, 0, quick ? 2 : 8, 4, 21);
                for (int k : List.of(0, 1, 2, 4, 8)) {
                    ShuffleCost.Cost c = k == 0 ? fresh : ShuffleCost.measure(n, batch, k, quick ? 2 : 8, 4, 21 + k);
                    metric(
                            "shuffle_position_shift",
                            c.positionShift(),
                            "of an epoch",
                            "consumers_joined_mid_epoch",
                            k,
                            "fresh_shuffle",
                            fresh.positionShift(),
                            "samples",
                            n,
                            "batch",
                            batch);
                    metric(
                            "shuffle_batchmates_again",
                            c.batchmatesAgain(),
                            "of pairs",
                            "consumers_joined_mid_epoch",
                            k,
                            "fresh_shuffle",
                            fresh.batchmatesAgain(),
                            "samples",
                            n,
                            "batch",
                            batch);
                }
            }
            if (wants("latejoin")) {
                int epochs = quick ? 2 : 4;
                progress.phase("late joiners, warming up");
                LateJoinRun.run(4, 1, true, true, 1); // the first run in a JVM pays for compiling the paths
                for (boolean random : new boolean[] {false, true}) {
                    for (boolean producerOrder : new boolean[] {true, false}) {
                        progress.phase("4 consumers, " + (random ? "joining at random times" : "aligned") + ", "
                                + (producerOrder ? "exact" : "seeded") + " order");
                        LateJoinRun.Result res = LateJoinRun.run(4, epochs, random, producerOrder, 77);
                        metric(
                                "latejoin_loader_work_per_delivered_sample",
                                res.loaderWorkPerDelivered(),
                                "samples",
                                "joins",
                                res.joins(),
                                "order",
                                res.order(),
                                "consumers",
                                res.consumers(),
                                "epochs_each",
                                epochs,
                                "aligned_ideal",
                                1.0 / res.consumers());
                        metric(
                                "latejoin_delivered_samples_per_s",
                                res.deliveredPerSecond(),
                                "samples/s",
                                "joins",
                                res.joins(),
                                "order",
                                res.order(),
                                "consumers",
                                res.consumers(),
                                "loader_ms_per_batch",
                                2);
                        metric(
                                "latejoin_exact_epochs",
                                (double) res.exactEpochs() / res.epochs(),
                                "of epochs",
                                "joins",
                                res.joins(),
                                "order",
                                res.order(),
                                "epochs",
                                res.epochs());
                    }
                }
            }
            if (wants("rss")) {
                for (int b : List.of(64, 100)) {
                    progress.phase("resident memory of a consumer, batch " + b);
                    Harness.Rss r = Harness.consumerRss(b, quick ? 20 : 50);
                    metric(
                            "consumer_extra_rss_mb",
                            r.extraMb(),
                            "MiB",
                            "consumer_batch",
                            b,
                            "producer_batch",
                            64,
                            "batches_read",
                            r.batches(),
                            "private_anon_mb",
                            r.extraAnonMb(),
                            "shared_mapped_mb",
                            r.readerShmemKb() / 1024.0,
                            "baseline_rss_mb",
                            r.baselineKb() / 1024.0);
                }
            }
        }
        printTable();
        writeCsv(out.resolve("bench.csv"));
        System.out.println(
                "# wrote " + out.resolve("bench.csv") + (Files.exists(out.resolve("fanout.png")) ? ", fanout.png" : "")
                        + (Files.exists(out.resolve("speedup.png")) ? ", speedup.png" : ""));
        return 0;
    }

    private boolean wants(String what) {
        return only == null || only.contains(what);
    }

    private void metric(String name, double value, String unit, Object... params) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("metric", name);
        m.put("value", value);
        m.put("unit", unit);
        for (int i = 0; i + 1 < params.length; i += 2) {
            m.put((String) params[i], params[i + 1]);
        }
        metrics.add(m);
        Json j = Json.object();
        m.forEach(j::put);
        System.out.println(j);
        System.out.flush();
    }

    private void printTable() {
        System.out.printf("%n%-24s %12s  %-24s %s%n", "metric", "value", "unit", "parameters");
        for (Map<String, Object> m : metrics) {
            StringBuilder params = new StringBuilder();
            m.forEach((k, v) -> {
                if (!k.equals("metric") && !k.equals("value") && !k.equals("unit")) {
                    params.append(k)
                            .append('=')
                            .append(v instanceof Double d ? String.format(Locale.ROOT, "%.2f", d) : v)
                            .append(' ');
                }
            });
            System.out.printf(
                    Locale.ROOT,
                    "%-24s %12.2f  %-24s %s%n",
                    m.get("metric"),
                    (Double) m.get("value"),
                    m.get("unit"),
                    params);
        }
    }

    private void writeCsv(Path file) throws IOException {
        StringBuilder s = new StringBuilder("metric,value,unit,parameters\n");
        for (Map<String, Object> m : metrics) {
            StringBuilder params = new StringBuilder();
            m.forEach((k, v) -> {
                if (!k.equals("metric") && !k.equals("value") && !k.equals("unit")) {
                    params.append(params.isEmpty() ? "" : ";")
                            .append(k)
                            .append('=')
                            .append(v);
                }
            });
            s.append(m.get("metric"))
                    .append(',')
                    .append(String.format(Locale.ROOT, "%.4f", (Double) m.get("value")))
                    .append(',')
                    .append(m.get("unit"))
                    .append(",\"")
                    .append(params.toString().replace("\"", "'"))
                    .append("\"\n");
        }
        Files.writeString(file, s);
    }

    private void fanoutChart(List<Harness.Fanout> fs, double limit) throws IOException {
        List<String> cats = fs.stream()
                .map(f -> f.consumers() + (f.consumers() == 1 ? " consumer" : " consumers"))
                .toList();
        new BarChart("Fan-out of 64x3x224x224 float32 batches (38.5 MB) to K consumer JVMs", "batches/s", cats)
                .subtitle(
                        "aggregate over all consumers and per consumer; dashed: one memory copy per batch at the measured bandwidth")
                .series(
                        "aggregate",
                        fs.stream().mapToDouble(Harness.Fanout::aggregate).toArray())
                .series(
                        "per consumer (slowest)",
                        fs.stream().mapToDouble(Harness.Fanout::perConsumer).toArray())
                .reference(limit, String.format(Locale.ROOT, "memcpy limit %.0f batches/s", limit))
                .write(out.resolve("fanout.png"));
    }

    private void speedupChart(List<double[]> rows) throws IOException {
        List<String> cats = rows.stream().map(r -> (int) r[0] + " jobs").toList();
        new BarChart("JPEG pipeline: K private pipelines vs one shared producer", "samples/s (all jobs)", cats)
                .subtitle(String.format(
                        Locale.ROOT,
                        "batch 32, %.0f ms simulated step; speedup %s",
                        stepMs,
                        String.join(
                                ", ",
                                rows.stream()
                                        .map(r -> String.format(Locale.ROOT, "K=%d %.2fx", (int) r[0], r[2] / r[1]))
                                        .toList())))
                .series(
                        "private pipelines",
                        rows.stream().mapToDouble(r -> r[1]).toArray())
                .series(
                        "one shared producer",
                        rows.stream().mapToDouble(r -> r[2]).toArray())
                .write(out.resolve("speedup.png"));
    }
}
