package io.tensorsocket.cli;

import io.tensorsocket.pipeline.Decoders;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tensorsocket demo}: the same K training jobs run twice for the same time, first each with its
 * own private JPEG pipeline, then all sharing one producer; prints throughput and CPU per sample of
 * both, and draws a chart.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "Run K simulated training jobs on JPEGs twice: each with a private pipeline, then sharing one producer.",
            "Prints samples/s per job and in total, CPU time per sample (every process counted), the speedup, and"
                    + " writes a chart. Needs no data: it makes photo-like JPEGs once and caches them."
        })
final class DemoCommand implements Callable<Integer> {

    @Option(
            names = {"--jobs", "--consumers"},
            defaultValue = "3",
            description = "Training jobs (default ${DEFAULT-VALUE}).")
    int jobs;

    @Option(
            names = "--seconds",
            defaultValue = "20",
            description = "Measured time per mode (default ${DEFAULT-VALUE}).")
    double seconds;

    @Option(
            names = "--warmup-s",
            defaultValue = "3",
            description = "Unmeasured time before each mode's window (default ${DEFAULT-VALUE}).")
    double warmupS;

    @Option(
            names = "--batch-size",
            defaultValue = "32",
            description = "Each job's batch size (default ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(
            names = "--step-ms",
            defaultValue = "40",
            description =
                    "Simulated accelerator time per batch: the job sleeps this long per step (default ${DEFAULT-VALUE}).")
    double stepMs;

    @Option(
            names = "--workers",
            description = "Decode threads per pipeline, the same for each private pipeline and the shared producer"
                    + " (default: one per processor).")
    Integer workers;

    @Option(names = "--images", description = "Use this image folder instead of the generated JPEGs.")
    Path images;

    @Option(
            names = "--cache-mb",
            paramLabel = "MIB",
            description = "Also run the shared producer with a decoded-sample cache of this many MiB (a third mode,"
                    + " 'cached': each image decoded once, then only augmented; the same bytes).")
    Long cacheMb;

    @Option(names = "--image-count", defaultValue = "500", description = "Generated JPEGs (default ${DEFAULT-VALUE}).")
    int imageCount;

    @Option(
            names = "--decoder",
            defaultValue = "auto",
            description = "auto, turbojpeg or imageio (default ${DEFAULT-VALUE}).")
    String decoder;

    @Option(
            names = "--transform",
            defaultValue = "RandomResizedCrop(224), RandomHorizontalFlip(0.5), Normalize(imagenet)",
            description = "Image transforms (default ${DEFAULT-VALUE}).")
    String transform;

    @Option(
            names = "--format",
            defaultValue = "float32",
            description = "Tensor format of the images: float32 (CHW) or uint8 (HWC) (default ${DEFAULT-VALUE}).")
    String format;

    /** The option's earlier name, which read like a file path; still accepted. */
    @Option(names = "--output", hidden = true)
    void output(String value) {
        format = value;
    }

    @Option(
            names = "--chart",
            defaultValue = "tensorsocket-demo.png",
            description = "Where to write the chart (default ${DEFAULT-VALUE}).")
    Path chart;

    @Option(names = "--model", description = "Train a real DJL model in each job instead of simulating the step.")
    String model;

    @Override
    public Integer call() throws Exception {
        if (model != null) {
            OptionalParts.checkModel(model); // before anything starts
            OptionalParts.requireDjl("demo --model");
        }
        if (jobs < 1 || batchSize < 1 || !(seconds > 0) || warmupS < 0) {
            throw new IllegalArgumentException("--jobs and --batch-size must be at least 1 and --seconds positive");
        }
        if (cacheMb != null && cacheMb < 1) {
            throw new IllegalArgumentException("--cache-mb takes 1 MiB or more, not " + cacheMb
                    + "; leave it out to compare private pipelines with one shared producer only");
        }
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        int cpus = Runtime.getRuntime().availableProcessors();
        int w = workers != null ? workers : cpus;
        String decoderName = Decoders.named(decoder).name();
        double perMode = seconds + warmupS + 6;
        int modes = cacheMb != null ? 3 : 2;
        try (ProgressBar progress = new ProgressBar(modes * perMode + (images == null ? 3 : 0))) {
            Path folder = images;
            if (folder == null) {
                folder = DemoImages.defaultFolder();
                if (!DemoImages.isReady(folder, imageCount, 10)) {
                    progress.phase("preparing " + imageCount + " JPEGs in " + folder + " (once)");
                }
                DemoImages.ensure(folder, imageCount, 10);
            }
            TrainingComparison.Config c = new TrainingComparison.Config(
                    folder, jobs, batchSize, batchSize, stepMs, seconds, warmupS, w, decoder, transform, format, 42,
                    model, 0);
            progress.println(String.format(
                    Locale.ROOT,
                    "%d training jobs, batch %d, each step %s;"
                            + " %s; %s decoder, %d decode thread(s) per pipeline; %d processors",
                    jobs,
                    batchSize,
                    model != null
                            ? "a real DJL " + model + " training step on the CPU"
                            : String.format(Locale.ROOT, "simulated as %.0f ms of accelerator time (sleep)", stepMs),
                    images == null
                            ? imageCount + " photo-like " + DemoImages.WIDTH + "x" + DemoImages.HEIGHT + " JPEGs"
                            : "images in " + folder,
                    decoderName,
                    w,
                    cpus));
            progress.println("transforms: " + transform + " -> " + format);
            progress.phase("private: " + jobs + " jobs, each decoding its own JPEGs");
            TrainingComparison.ModeResult priv = TrainingComparison.runPrivate(c);
            progress.phase("shared: " + jobs + " jobs reading from one producer");
            TrainingComparison.ModeResult shared = TrainingComparison.runShared(c);
            List<TrainingComparison.ModeResult> all = new ArrayList<>(List.of(priv, shared));
            if (cacheMb != null) {
                progress.phase("cached: " + jobs + " jobs reading from one producer with a " + cacheMb
                        + " MiB decoded-sample cache");
                all.add(TrainingComparison.runShared(c.withCacheMb(cacheMb)));
            }
            progress.close();
            print(all);
            writeChart(
                    priv,
                    shared,
                    chart,
                    String.format(
                            Locale.ROOT,
                            "%d jobs, batch %d, %.0f ms simulated step, %s, %d processors",
                            jobs,
                            batchSize,
                            stepMs,
                            decoderName,
                            cpus));
            System.out.println("chart: " + chart.toAbsolutePath());
            String first = shared.jobs().getFirst().crc();
            boolean sameBytes = all.stream()
                    .flatMap(m -> m.jobs().stream())
                    .allMatch(j -> j.crc().equals(first));
            boolean ok = all.stream().allMatch(TrainingComparison.ModeResult::inOrder) && sameBytes;
            System.out.println(
                    ok
                            ? "checked: every job got every sample once and in order, and the first "
                                    + "64 samples were byte-identical in every private pipeline and from the shared producer"
                                    + (cacheMb != null ? ", with its cache too" : "")
                            : "CHECK FAILED: samples out of order, or the shared batches differ from the private ones: "
                                    + String.join(
                                            "; ",
                                            all.stream()
                                                    .flatMap(m -> m.jobs().stream()
                                                            .map(j -> m.mode() + " job " + j.job() + " out of order "
                                                                    + j.outOfOrder() + ", first stream position "
                                                                    + j.firstPosition() + ", CRC " + j.crc()))
                                                    .toList()));
            return ok ? 0 : 1;
        }
    }

    /** The table of every mode's jobs, then each mode after the first (private) against it. */
    static void print(List<TrainingComparison.ModeResult> modes) {
        TrainingComparison.ModeResult priv = modes.getFirst();
        System.out.printf("%n%-8s %-5s %10s %14s %7s%n", "mode", "job", "samples/s", "CPU ms/sample", "wait");
        for (TrainingComparison.ModeResult m : modes) {
            for (TrainingComparison.JobResult j : m.jobs()) {
                double share = j.waitS() + j.workS() > 0 ? j.waitS() / (j.waitS() + j.workS()) : Double.NaN;
                System.out.printf(
                        Locale.ROOT,
                        "%-8s %-5d %10.1f %14s %6.0f%%%n",
                        m.mode(),
                        j.job(),
                        j.samplesPerS(),
                        "",
                        100 * share);
            }
            System.out.printf(
                    Locale.ROOT,
                    "%-8s %-5s %10.1f %14.2f %6.0f%%%n",
                    m.mode(),
                    "all",
                    m.aggregate(),
                    m.cpuMsPerSample(),
                    100 * m.waitShare());
        }
        System.out.println();
        for (TrainingComparison.ModeResult shared : modes.subList(1, modes.size())) {
            System.out.printf(
                    Locale.ROOT,
                    "%s vs private: %.2fx the samples/s, %.2fx the CPU time per sample"
                            + " (producer included: %.1f of %.1f CPU-s)%n",
                    shared.mode(),
                    shared.aggregate() / priv.aggregate(),
                    shared.cpuMsPerSample() / priv.cpuMsPerSample(),
                    shared.producerCpuS(),
                    shared.cpuS());
        }
        System.out.println(
                "CPU ms/sample: CPU time of every process of the mode (jobs and producer) per sample delivered to a job;"
                        + " wait: share of each job's time spent waiting for data rather than in its training step");
    }

    static void writeChart(
            TrainingComparison.ModeResult priv, TrainingComparison.ModeResult shared, Path file, String subtitle)
            throws IOException {
        List<String> cats = new ArrayList<>();
        int k = priv.jobs().size();
        double[] p = new double[k];
        double[] s = new double[k];
        for (int i = 0; i < k; i++) {
            cats.add("job " + (i + 1));
            p[i] = priv.jobs().get(i).samplesPerS();
            s[i] = shared.jobs().get(i).samplesPerS();
        }
        new BarChart("Samples/s per training job: private pipelines vs one shared producer", "samples/s", cats)
                .subtitle(String.format(
                        Locale.ROOT,
                        "all jobs: %.0f vs %.0f samples/s (%.2fx); %s",
                        priv.aggregate(),
                        shared.aggregate(),
                        shared.aggregate() / priv.aggregate(),
                        subtitle))
                .series("private pipeline per job", p)
                .series("one shared producer", s)
                .write(file);
    }
}
