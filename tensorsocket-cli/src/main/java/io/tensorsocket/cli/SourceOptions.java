package io.tensorsocket.cli;

import com.sun.management.OperatingSystemMXBean;
import io.tensorsocket.BatchSource;
import io.tensorsocket.external.ExternalSource;
import io.tensorsocket.flight.RelaySource;
import io.tensorsocket.flight.RemoteOptions;
import io.tensorsocket.pipeline.DecodedCache;
import io.tensorsocket.pipeline.Decoders;
import io.tensorsocket.pipeline.IdxDataset;
import io.tensorsocket.pipeline.IdxSource;
import io.tensorsocket.pipeline.ImageFolder;
import io.tensorsocket.pipeline.ImagePipelineSource;
import io.tensorsocket.pipeline.Normalization;
import io.tensorsocket.pipeline.OutputFormat;
import io.tensorsocket.pipeline.TransformPipeline;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Option;

/** What a producer serves, as {@code serve} and the private mode of {@code job} read it from the command line. */
final class SourceOptions {

    @ArgGroup(multiplicity = "1")
    Kind kind;

    static final class Kind {
        @Option(
                names = "--synthetic",
                paramLabel = "SPEC",
                description = "Generated data: samples=S,shape=3x32x32,dtype=float32,seed=K[,classes=C][,order=O];"
                        + " order=producer (the default) keeps every epoch of a consumer joining mid-epoch one pass over"
                        + " the data, order=seeded gives every epoch a fresh shuffle and such consumers roll")
        String synthetic;

        @Option(
                names = "--images",
                paramLabel = "DIR",
                description = "A folder of JPEG/PNG images, one sub-folder per class (torchvision ImageFolder layout).")
        Path images;

        @Option(
                names = "--idx",
                paramLabel = "DIR",
                description = "A folder of MNIST-format IDX files (e.g. Fashion-MNIST).")
        Path idx;

        @Option(
                names = "--from",
                paramLabel = "URI",
                description = "Relay a remote producer (grpc://HOST:PORT/NAME or grpc+tls://...) into this one.")
        String from;

        @Option(
                names = "--external",
                description =
                        "Batches come from one feeder process (e.g. a PyTorch DataLoader through the Python client's"
                                + " TensorProducer or `python3 -m tensorsocket_client feed`), which declares their layout.")
        boolean external;
    }

    @Option(names = "--batch-size", description = "The loader's batch size (required, except with --external).")
    Integer batchSize;

    @Option(
            names = "--feeder-wait-s",
            defaultValue = "600",
            description = "With --external: how long to wait for the feeder to connect (default ${DEFAULT-VALUE}).")
    double feederWaitS;

    @Option(
            names = "--feeder-pid",
            paramLabel = "PID",
            description =
                    "With --external: the producer was started for the feeder process PID and stops with it (when"
                            + " it exits, or its declaration is refused, before the stream began) instead of waiting for another.")
    Long feederPid;

    @Option(
            names = "--feeder-timeout-s",
            defaultValue = "120",
            description =
                    "With --external: fail the stream when the feeder is silent this long (default ${DEFAULT-VALUE}).")
    double feederTimeoutS;

    @Option(
            names = "--transform",
            paramLabel = "LIST",
            defaultValue = "RandomResizedCrop(224), RandomHorizontalFlip(0.5), Normalize(imagenet)",
            description = "Image transforms, torchvision style (default: ${DEFAULT-VALUE}).")
    String transform;

    @Option(
            names = "--output",
            defaultValue = "float32",
            description = "Image tensor: float32 (CHW) or uint8 (HWC) (default ${DEFAULT-VALUE}).")
    String output;

    @Option(
            names = "--decoder",
            defaultValue = "auto",
            description = "JPEG decoder: auto, turbojpeg or imageio (default ${DEFAULT-VALUE}).")
    String decoder;

    @Option(
            names = "--mean",
            paramLabel = "M",
            description =
                    "IDX float32 images: subtract this after scaling pixels to [0, 1], like torchvision's Normalize"
                            + " (default 0; Fashion-MNIST's training set: 0.2860). Consumers read it from the producer.")
    Float mean;

    @Option(
            names = "--std",
            paramLabel = "S",
            description = "IDX float32 images: then divide by this (default 1; Fashion-MNIST's training set: 0.3530).")
    Float std;

    @Option(names = "--workers", description = "Decode threads (default: one per processor for images, 1 for IDX).")
    Integer workers;

    @Option(
            names = "--seed",
            defaultValue = "0",
            description = "Seed of shuffling and augmentation (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--split",
            defaultValue = "train",
            description = "IDX split: train or test (default ${DEFAULT-VALUE}).")
    String split;

    @Option(names = "--no-shuffle", description = "Visit samples in file order every epoch.")
    boolean noShuffle;

    @Option(names = "--loader-drop-last", description = "The loader leaves out each epoch's last partial batch.")
    boolean loaderDropLast;

    @Option(
            names = "--loader-delay-ms",
            defaultValue = "0",
            description =
                    "Extra time the synthetic loader spends per batch, standing in for decoding (default ${DEFAULT-VALUE}).")
    double loaderDelayMs;

    @Option(
            names = "--preload",
            description = "Synthetic data: generate every sample into memory before serving, so a"
                    + " batch costs one copy per sample (the data plane alone, as from a data set already in memory; takes"
                    + " samples x sample bytes of memory).")
    boolean preload;

    @Option(
            names = "--cache-mb",
            paramLabel = "MIB",
            description = "--images: keep up to this many MiB of decoded images across epochs, so each image is"
                    + " decoded once while it fits and only augmented after (the bytes served are the same); default:"
                    + " none, decode every epoch.")
    Long cacheMb;

    @Option(
            names = "--cache-resize",
            paramLabel = "PIXELS",
            description = "--images: shrink each decoded image to this shorter side (where longer; the aspect ratio"
                    + " kept) before it is cached and augmented, cached or not, so the cache holds more images;"
                    + " the augmentation then starts from the smaller image. Default: as decoded.")
    Integer cacheResize;

    @Option(
            names = "--sample-ids",
            description = "--images: batches also hold `index` (int64), each sample's index in the folder, so that"
                    + " consumers can augment the samples themselves, each seeded by its id (the Python client's"
                    + " SampleAugment); give --transform without random steps then. Default: image and label only.")
    boolean sampleIds;

    /** The decoded-sample cache of an image folder's pipelines, made by the first {@link #build}; null without one. */
    private DecodedCache cache;

    @ArgGroup(exclusive = false, heading = "Relay (--from) options:%n")
    RelayOptions relay = new RelayOptions();

    static final class RelayOptions {
        @Option(names = "--from-token", paramLabel = "TOKEN", description = "Shared token of the --from server.")
        String token;

        @Option(
                names = "--from-token-file",
                paramLabel = "FILE",
                description = "Read the --from server's token from this file.")
        Path tokenFile;

        @Option(
                names = "--from-trust",
                paramLabel = "PEM",
                description = "Trust this certificate for a grpc+tls:// --from.")
        Path trust;
    }

    /**
     * The image folder's pipeline with {@code transforms} (the folder's and the other options' as given), reading and
     * filling the one decoded-sample cache of this command's pipelines where {@code --cache-mb} asks for one.
     */
    ImagePipelineSource images(String transforms) throws IOException {
        ImageFolder folder = classPerFolder(kind.images);
        if (cacheMb != null && cache == null) {
            cache = new DecodedCache(cacheMb << 20, folder.size(), cacheResize == null ? 0 : cacheResize);
        }
        ImagePipelineSource.Builder b = ImagePipelineSource.builder(folder)
                .transforms(TransformPipeline.parse(transforms, OutputFormat.parse(output)))
                .decoder(Decoders.named(decoder))
                .batchSize(batchSize)
                .seed(seed)
                .shuffle(!noShuffle)
                .dropLast(loaderDropLast);
        if (cache != null) {
            b.cache(cache);
        }
        if (cacheResize != null) {
            b.cacheResize(cacheResize);
        }
        b.sampleIds(sampleIds);
        if (workers != null) {
            b.workers(workers);
        }
        return b.build();
    }

    /** The decoded-sample cache {@link #images} made, or null; closed by whoever ran the sources, after them. */
    DecodedCache cache() {
        return cache;
    }

    /** Refuses a {@code --preload} of more than half this machine's memory, saying how much it would take. */
    private static void checkPreloadFits(SyntheticSpec spec) {
        long bytes;
        try {
            bytes = SyntheticSource.preloadBytes(spec);
        } catch (ArithmeticException e) {
            bytes = Long.MAX_VALUE;
        }
        long total = ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
                ? os.getTotalMemorySize()
                : Long.MAX_VALUE;
        if (bytes > total / 2) {
            throw new IllegalArgumentException("--preload of " + spec.samples() + " samples of " + spec.sampleBytes()
                    + " bytes needs " + bytes / (1 << 20) + " MiB, more than half of this machine's "
                    + total / (1 << 20) + " MiB; serve fewer samples, or leave out --preload");
        }
    }

    /** How long a relay waits for any one batch of its upstream, the first (an epoch start away) included. */
    static final Duration RELAY_BATCH_TIMEOUT = Duration.ofHours(1);

    /** Builds the source; {@code producer} names it in an external source's messages. */
    BatchSource build(String producer) throws Exception {
        if ((cacheMb != null || cacheResize != null) && kind.images == null) {
            throw new IllegalArgumentException((cacheMb != null ? "--cache-mb" : "--cache-resize")
                    + " keeps decoded images: it applies to --images sources");
        }
        if (sampleIds && kind.images == null) {
            throw new IllegalArgumentException("--sample-ids applies to --images sources (a synthetic source's samples"
                    + " carry their id already; an --idx or --from source's do not)");
        }
        if (kind.external) {
            if (batchSize != null) {
                throw new IllegalArgumentException(
                        "--external takes its batch size from the feeder's declaration; leave" + " out --batch-size");
            }
            ProcessHandle owner = null;
            if (feederPid != null) {
                owner = ProcessHandle.of(feederPid)
                        .orElseThrow(() -> new IllegalArgumentException("--feeder-pid " + feederPid
                                + ": no such process (the feeder that was to feed this producer has exited)"));
            }
            return new ExternalSource(
                    producer, ServeCommand.seconds(feederWaitS), ServeCommand.seconds(feederTimeoutS), owner);
        }
        if (batchSize == null) {
            throw new IllegalArgumentException("give the loader's batch size with --batch-size");
        }
        if (kind.from != null) {
            RemoteOptions o = RemoteOptions.defaults();
            String t = relay.token != null
                    ? relay.token
                    : relay.tokenFile != null
                            ? Files.readString(relay.tokenFile).strip()
                            : null;
            if (t != null) {
                o = o.withToken(t);
            }
            if (relay.trust != null) {
                o = o.withTrustedCertificates(relay.trust);
            }
            // A relay that joins mid-epoch waits for the upstream's next epoch start, which may be as far off as
            // one epoch of a large dataset; the server's heartbeats and the upstream producer's liveness tell a
            // dead peer within seconds, so the batch bound only has to catch an upstream loader that hangs.
            return RelaySource.connect(kind.from, batchSize, o, RELAY_BATCH_TIMEOUT);
        }
        if ((mean != null || std != null) && kind.idx == null) {
            throw new IllegalArgumentException("--mean and --std apply to --idx sources; for --images put"
                    + " Normalize(mean=(r, g, b), std=(r, g, b)) in --transform");
        }
        if (preload && kind.synthetic == null) {
            throw new IllegalArgumentException(
                    "--preload applies to --synthetic sources; other sources load what they" + " serve themselves");
        }
        if (kind.synthetic != null) {
            Duration delay = Duration.ofNanos((long) (loaderDelayMs * 1e6));
            SyntheticSpec spec = SyntheticSpec.parse(kind.synthetic);
            SyntheticSource source = new SyntheticSource(spec, batchSize, delay);
            if (preload) {
                checkPreloadFits(spec);
                source = source.preload();
            }
            return SyntheticSpec.asksForSeededOrder(kind.synthetic) ? source.seeded() : source;
        }
        if (kind.images != null) {
            return images(transform);
        }
        IdxSource.Builder b = IdxSource.builder(IdxDataset.open(kind.idx, split))
                .batchSize(batchSize)
                .seed(seed)
                .shuffle(!noShuffle)
                .dropLast(loaderDropLast);
        if (output.trim().toLowerCase(Locale.ROOT).startsWith("uint8")) {
            if (mean != null || std != null) {
                throw new IllegalArgumentException("--mean and --std apply to float32 images; --output uint8 serves the"
                        + " file's bytes unchanged");
            }
            b.uint8();
        } else {
            Normalization n = new Normalization(mean == null ? 0f : mean, std == null ? 1f : std);
            b.floats(n.mean(), n.std());
        }
        if (workers != null) {
            b.workers(workers);
        }
        return b.build();
    }

    /**
     * The folder, refused when it has a single class: that is a folder of images one level too high or too low
     * (a labelled data set has two classes at least), and serving it would train on one label without a word.
     */
    static ImageFolder classPerFolder(Path root) throws IOException {
        ImageFolder f = ImageFolder.scan(root);
        if (f.classes().size() == 1) {
            String only = f.classes().getFirst();
            throw new IllegalArgumentException(root + " has a single class sub-folder ('" + only
                    + "'); --images expects one"
                    + " sub-folder per class, " + root + "/<class>/<image>.jpg, with two classes at least; if '" + only
                    + "' holds the class folders, pass " + root.resolve(only));
        }
        return f;
    }
}
