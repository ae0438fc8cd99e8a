package io.tensorsocket.pipeline;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.BatchSource;
import io.tensorsocket.SlotWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * Measures the image pipeline: photo-like 500x375 JPEGs to 224x224 float32 CHW through
 * RandomResizedCrop + RandomHorizontalFlip + Normalize, decoded by TurboJPEG and by ImageIO, with 1
 * and 2 worker threads, written into native slots as a producer would. Reports images/s, images/s
 * per worker thread, and images per CPU-second of the whole process (the fairest "per core" number on
 * a shared machine). Last, with a decoded-sample cache ({@link DecodedCache}): epoch 0, which decodes and keeps every
 * image, against later epochs, which only augment.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp ... io.tensorsocket.pipeline.PipelineBench [--dir DIR]
 *      [--images 200] [--seconds 4] [--threads 1,2] [--decoders turbojpeg,imageio] [--cache-resize S]
 * </pre>
 */
public final class PipelineBench {
    private PipelineBench() {}

    @SuppressWarnings("IncrementInForLoopAndHeader") // an option's value is skipped in the loop's body
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "tensorsocket-bench-jpegs");
        int images = 200;
        double seconds = 4;
        String threads = "1,2";
        String decoders = TurboJpegDecoder.isAvailable() ? "turbojpeg,imageio" : "imageio";
        int cacheResize = 0;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : "";
            switch (args[i]) {
                case "--dir" -> dir = Path.of(value);
                case "--images" -> images = Integer.parseInt(value);
                case "--seconds" -> seconds = Double.parseDouble(value);
                case "--threads" -> threads = value;
                case "--decoders" -> decoders = value;
                case "--cache-resize" -> cacheResize = Integer.parseInt(value);
                default ->
                    throw new IllegalArgumentException("unknown option " + args[i]
                            + "; use --dir DIR --images N --seconds S --threads 1,2 --decoders turbojpeg,imageio"
                            + " --cache-resize S");
            }
            i++;
        }
        long t0 = System.nanoTime();
        SyntheticImages.jpegFolder(dir, images, 10, 500, 375);
        long bytes;
        try (Stream<Path> s = Files.walk(dir)) {
            bytes = s.filter(ImageFolder::isImage)
                    .mapToLong(p -> p.toFile().length())
                    .sum();
        }
        System.out.printf(
                Locale.ROOT,
                "%d JPEGs 500x375 in %s, mean %.1f KiB (ready in %.1f s); %d processors; %s%n",
                images,
                dir,
                bytes / 1024.0 / images,
                (System.nanoTime() - t0) / 1e9,
                Runtime.getRuntime().availableProcessors(),
                Runtime.version());
        System.out.println(
                "500x375 JPEG -> RandomResizedCrop(224) + RandomHorizontalFlip(0.5) + Normalize(imagenet) -> float32 [3,224,224], batch 32");
        ImageFolder folder = ImageFolder.scan(dir);
        System.out.printf(
                "%-10s %7s %10s %17s %15s%n", "decoder", "threads", "images/s", "images/s/thread", "images/cpu-s");
        for (String d : decoders.split(",")) {
            for (String t : threads.split(",")) {
                Result r = run(folder, Decoders.named(d), Integer.parseInt(t.trim()), seconds);
                System.out.printf(
                        Locale.ROOT,
                        "%-10s %7d %10.0f %17.0f %15.0f%n",
                        d,
                        r.threads,
                        r.perSecond,
                        r.perSecond / r.threads,
                        r.perCpuSecond);
            }
        }
        decodeOnly(folder, seconds);
        ImageDecoder d = Decoders.named(decoders.split(",")[0]);
        for (String t : threads.split(",")) {
            cached(folder, d, Integer.parseInt(t.trim()), seconds, cacheResize);
        }
        double privately = threeAugmentations(folder, d, seconds, false);
        double shared = threeAugmentations(folder, d, seconds, true);
        System.out.printf(
                Locale.ROOT,
                "three augmentations (crop scale (0.08,1), (0.3,1), (0.6,1)), one thread each: private pipelines %.0f"
                        + " images/s in all, one shared decoded-sample cache %.0f (%.2fx), epochs 1+%n",
                privately,
                shared,
                shared / privately);
    }

    /**
     * Three pipelines of the folder side by side, each its own crop scale and one worker thread, as three trials that
     * augment differently: each decoding every epoch, or all three reading one decoded-sample cache filled in their
     * first epoch. Returns the images/s of the three together over epochs 1 and later.
     */
    private static double threeAugmentations(ImageFolder folder, ImageDecoder decoder, double seconds, boolean share)
            throws Exception {
        long bytes = roomForAll(folder, decoder);
        double[] scales = {0.08, 0.3, 0.6};
        List<ImagePipelineSource> sources = new ArrayList<>();
        List<RingSink> sinks = new ArrayList<>();
        try (DecodedCache cache = share ? new DecodedCache(bytes, folder.size()) : null) {
            for (double scale : scales) {
                ImagePipelineSource.Builder b = ImagePipelineSource.builder(folder)
                        .decoder(decoder)
                        .transforms(TransformPipeline.of(List.of(
                                new Transform.RandomResizedCrop(224, 224, scale, 1.0, 3.0 / 4.0, 4.0 / 3.0),
                                Transform.randomHorizontalFlip(0.5),
                                Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD))))
                        .batchSize(32)
                        .workers(1)
                        .prefetch(2)
                        .seed(1);
                if (cache != null) {
                    b.cache(cache);
                }
                ImagePipelineSource source = b.build();
                sources.add(source);
                sinks.add(new RingSink(source.layout(), 3));
            }
            for (int i = 0; i < 3; i++) {
                sources.get(i).emitEpoch(0, sinks.get(i)); // fills the cache (the first), warms the JIT
            }
            LongAdder samples = new LongAdder();
            long end = System.nanoTime() + (long) (seconds * 1e9);
            long start = System.nanoTime();
            List<Thread> trials = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ImagePipelineSource source = sources.get(i);
                RingSink sink = sinks.get(i);
                trials.add(Thread.ofPlatform().start(() -> {
                    try {
                        for (long e = 1; System.nanoTime() < end; e++) {
                            source.emitEpoch(e, sink);
                            samples.add(source.samplesPerEpoch());
                        }
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }));
            }
            for (Thread t : trials) {
                t.join();
            }
            return samples.sum() / ((System.nanoTime() - start) / 1e9);
        } finally {
            for (int i = 0; i < sources.size(); i++) {
                sinks.get(i).close();
                sources.get(i).close();
            }
        }
    }

    /**
     * The decoded-sample cache: epoch 0 decodes every image (and keeps it), later epochs only augment what was kept.
     * Prints both rates, per wall and per CPU second, and their ratio.
     */
    private static void cached(ImageFolder folder, ImageDecoder decoder, int threads, double seconds, int resize)
            throws Exception {
        ImagePipelineSource.Builder b = imagenet(folder, decoder, threads).cacheBytes(roomForAll(folder, decoder));
        if (resize > 0) {
            b.cacheResize(resize);
        }
        try (ImagePipelineSource source = b.build();
                RingSink sink = new RingSink(source.layout(), 3)) {
            long cpu0 = processCpuNanos();
            long start = System.nanoTime();
            source.emitEpoch(0, sink);
            double firstWall = (System.nanoTime() - start) / 1e9;
            double firstCpu = (processCpuNanos() - cpu0) / 1e9;
            Timed later = timedEpochs(source, sink, 1, 3, seconds);
            long samples = later.samples();
            double wall = later.wall();
            double cpu = later.cpu();
            int n = folder.size();
            System.out.printf(
                    Locale.ROOT,
                    "cache, %d thread(s): epoch 0 (decode + augment) %.0f images/s, %.0f images/cpu-s; epochs 1+"
                            + " (augment only) %.0f images/s, %.0f images/cpu-s: %.2fx the rate, %.2fx per cpu-s;"
                            + " %d images kept%s, %.0f MiB (%.0f KiB each); process RSS %.0f MiB%n",
                    threads,
                    n / firstWall,
                    n / firstCpu,
                    samples / wall,
                    samples / cpu,
                    (samples / wall) / (n / firstWall),
                    (samples / cpu) / (n / firstCpu),
                    source.cache().samplesHeld(),
                    resize > 0 ? " shrunk to a short side of " + resize : "",
                    source.cache().bytesHeld() / 1048576.0,
                    source.cache().bytesHeld()
                            / 1024.0
                            / Math.max(1, source.cache().samplesHeld()),
                    residentBytes() / 1048576.0);
        }
    }

    /** This process's resident set ({@code VmRSS} of {@code /proc/self/status}), or -1 where it cannot be read. */
    private static long residentBytes() {
        return ProcFigures.bytes(Path.of("/proc/self/status"), "VmRSS");
    }

    private record Result(int threads, double perSecond, double perCpuSecond) {}

    /** Samples emitted in whole epochs over a timed stretch, its wall and CPU seconds. */
    private record Timed(long samples, double wall, double cpu) {}

    /**
     * Emits epochs from {@code epoch} on: for half of {@code seconds} (and up to epoch {@code warmUntil}) to warm up,
     * then whole epochs for at least {@code seconds}, timed.
     */
    private static Timed timedEpochs(BatchSource source, BatchSink sink, long epoch, long warmUntil, double seconds)
            throws Exception {
        long warmEnd = System.nanoTime() + (long) (seconds * 0.5e9);
        while (System.nanoTime() < warmEnd || epoch < warmUntil) {
            source.emitEpoch(epoch++, sink);
        }
        long samples = 0;
        long cpu0 = processCpuNanos();
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        do {
            source.emitEpoch(epoch++, sink);
            samples += source.samplesPerEpoch();
        } while (System.nanoTime() < end);
        return new Timed(samples, (System.nanoTime() - start) / 1e9, (processCpuNanos() - cpu0) / 1e9);
    }

    /** The measured pipeline: ImageNet's training transforms, batch 32, {@code threads} workers, seed 1. */
    private static ImagePipelineSource.Builder imagenet(ImageFolder folder, ImageDecoder decoder, int threads) {
        return ImagePipelineSource.builder(folder)
                .decoder(decoder)
                .transforms(TransformPipeline.imagenetTrain(224))
                .batchSize(32)
                .workers(threads)
                .prefetch(2)
                .seed(1);
    }

    /** A cache size with room for every decoded image of the folder, and more (its images are of one size). */
    private static long roomForAll(ImageFolder folder, ImageDecoder decoder) throws Exception {
        try (ImageFileReader reader = new ImageFileReader(decoder)) {
            RgbImage first = reader.read(folder.file(0));
            return (long) first.width() * first.height() * 3 * folder.size() * 2;
        }
    }

    private static Result run(ImageFolder folder, ImageDecoder decoder, int threads, double seconds) throws Exception {
        try (ImagePipelineSource source = imagenet(folder, decoder, threads).build();
                RingSink sink = new RingSink(source.layout(), 3)) {
            Timed t = timedEpochs(source, sink, 0, 2, seconds);
            return new Result(threads, t.samples() / t.wall(), t.samples() / t.cpu());
        }
    }

    /** Decode alone, one thread, for each available decoder: where the time goes. */
    private static void decodeOnly(ImageFolder folder, double seconds) throws Exception {
        List<ImageDecoder> all = new ArrayList<>();
        if (TurboJpegDecoder.isAvailable()) {
            all.add(TurboJpegDecoder.load());
        }
        all.add(ImageIoDecoder.INSTANCE);
        for (ImageDecoder d : all) {
            try (ImageFileReader reader = new ImageFileReader(d)) {
                long n = 0;
                long end = System.nanoTime() + (long) (seconds * 0.5e9);
                long start = System.nanoTime();
                while (System.nanoTime() < end) {
                    reader.read(folder.file((int) (n++ % folder.size())));
                }
                System.out.printf(
                        Locale.ROOT,
                        "decode only, %-9s 1 thread: %6.0f images/s (includes warm-up)%n",
                        d.name(),
                        n / ((System.nanoTime() - start) / 1e9));
            }
        }
    }

    private static long processCpuNanos() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
    }

    /** A producer stand-in: a ring of pre-touched native slots, each published at once. */
    private static final class RingSink implements BatchSink, AutoCloseable {
        private final BatchLayout layout;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment[][] slots;
        private int next;

        RingSink(BatchLayout layout, int count) {
            this.layout = layout;
            this.slots = new MemorySegment[count][layout.tensors().size()];
            for (MemorySegment[] slot : slots) {
                for (int t = 0; t < slot.length; t++) {
                    slot[t] = arena.allocate(layout.tensors().get(t).sampleBytes() * layout.batchSize(), 64);
                    slot[t].fill((byte) 0);
                }
            }
        }

        @Override
        public void put(Batch batch) {
            throw new UnsupportedOperationException("the pipeline writes in place");
        }

        @Override
        public int claimsAhead() {
            return slots.length - 1;
        }

        @Override
        public SlotWriter claim() {
            MemorySegment[] mem = slots[next++ % slots.length];
            return new SlotWriter() {
                @Override
                public int capacity() {
                    return layout.batchSize();
                }

                @Override
                public MemorySegment tensor(int index) {
                    return mem[index];
                }

                @Override
                public MemorySegment tensor(String name) {
                    return mem[layout.indexOf(name)];
                }

                @Override
                public void publish(int samples) {}
            };
        }

        @Override
        public void close() {
            arena.close();
        }
    }
}
