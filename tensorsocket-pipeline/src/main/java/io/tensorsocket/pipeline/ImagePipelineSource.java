package io.tensorsocket.pipeline;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves an {@link ImageFolder} through a {@link TransformPipeline}: worker threads decode and augment
 * each sample straight into the arena slot it belongs to. Batches hold {@value #IMAGE} (see
 * {@link TransformPipeline#spec}) and {@value #LABEL} (int64 per sample), and with {@link Builder#sampleIds} also
 * {@value #INDEX} (int64: each sample's index in the folder, for consumers that augment the samples themselves). Epoch {@code e} visits
 * samples in {@link EpochSampler} order and augments sample {@code i} with randomness from
 * (seed, e, i) only, so the bytes do not depend on the number of workers.
 *
 * <pre>{@code
 * BatchSource source = ImagePipelineSource.builder(Path.of("/data/train"))
 *         .transforms(TransformPipeline.imagenetTrain(224))
 *         .batchSize(64).workers(2).seed(42)
 *         .build();
 * }</pre>
 */
public final class ImagePipelineSource extends SampledSource<ImagePipelineSource.Worker> {
    private static final Logger log = LoggerFactory.getLogger(ImagePipelineSource.class);
    public static final String IMAGE = "image";
    public static final String LABEL = "label";
    public static final String INDEX = "index";

    private final ImageFolder folder;
    private final TransformPipeline transforms;
    private final ImageDecoder decoder;
    private final int workers;
    private final int prefetch;
    private final DecodedCache cache;
    private final boolean ownsCache;
    /** The shorter side decoded images are shrunk to before caching and augmentation; 0: as decoded. */
    private final int shortSide;
    /** Whether batches hold each sample's index ({@value #INDEX}). */
    private final boolean sampleIds;

    private ImagePipelineSource(Builder b, ImageFolder folder) {
        super(b.sampler(folder.size()), new BatchLayout(tensors(b), b.batchSize));
        this.folder = folder;
        this.sampleIds = b.sampleIds;
        this.transforms = b.transforms;
        this.decoder = b.decoder != null ? b.decoder : Decoders.best();
        this.workers = b.workers;
        this.prefetch = b.prefetch;
        this.ownsCache = b.cache == null && b.cacheBytes > 0;
        if (b.cache != null && b.cacheResize != null && b.cacheResize != b.cache.shortSide()) {
            throw new IllegalArgumentException("a pipeline that shrinks decoded images to a short side of "
                    + b.cacheResize + " cannot share a decoded-sample cache that keeps them at "
                    + (b.cache.shortSide() == 0 ? "their decoded size" : "a short side of " + b.cache.shortSide())
                    + "; give every pipeline of the cache the same --cache-resize");
        }
        this.cache = b.cache != null
                ? b.cache
                : ownsCache ? new DecodedCache(b.cacheBytes, folder.size(), orZero(b.cacheResize)) : null;
        this.shortSide = cache != null ? cache.shortSide() : orZero(b.cacheResize);
        if (cache != null) { // a DecodedCache holds more than 0 bytes
            log.info(
                    "decoded-sample cache of {} MiB for {} images: each is decoded once while it fits, then only"
                            + " augmented ({})",
                    cache.capacityBytes() >> 20,
                    folder.size(),
                    ownsCache ? "its own" : "shared with other pipelines");
        }
        startWorkers(new Writer(), b.workers, b.prefetch);
    }

    @Override
    protected void epochEmitted(long epoch) {
        if (cache != null) {
            log.info(cache.summary(epoch));
        }
    }

    @Override
    public ProducerStatus.Cache cacheFigures() {
        return cache == null ? ProducerStatus.Cache.NONE : cache.figures();
    }

    /** The decoded-sample cache this source reads and fills, or null where it decodes every epoch. */
    public DecodedCache cache() {
        return cache;
    }

    @Override
    public void close() {
        try {
            super.close();
        } finally {
            if (ownsCache) {
                cache.close();
            }
        }
    }

    /** A builder for the images under {@code root} ({@code root/<class>/<image>}). */
    public static Builder builder(Path root) {
        return new Builder(root, null);
    }

    /** A builder for an already scanned folder. */
    public static Builder builder(ImageFolder folder) {
        return new Builder(null, folder);
    }

    public ImageFolder folder() {
        return folder;
    }

    public TransformPipeline transforms() {
        return transforms;
    }

    /** The JPEG decoder in use. */
    public ImageDecoder decoder() {
        return decoder;
    }

    @Override
    public String description() {
        String d = "image-folder root=" + folder.root() + " classes="
                + folder.classes().size() + " images=" + folder.size()
                + " decoder=" + decoder.name() + " workers=" + workers + " prefetch=" + prefetch
                + " shuffle=" + sampler().shuffle() + " dropLast=" + sampler().dropLast() + " seed="
                + sampler().seed()
                + (shortSide == 0 ? "" : " cacheResize=" + shortSide)
                + (sampleIds ? " sampleIds=true" : "")
                + " transforms=" + transforms;
        return Descriptions.limit(d);
    }

    /** The batches' tensors: image and label, and the sample's index with {@link Builder#sampleIds}. */
    private static List<TensorSpec> tensors(Builder b) {
        List<TensorSpec> tensors =
                new ArrayList<>(List.of(b.transforms.spec(IMAGE), TensorSpec.of(LABEL, DType.INT64)));
        if (b.sampleIds) {
            tensors.add(TensorSpec.of(INDEX, DType.INT64));
        }
        return List.copyOf(tensors);
    }

    private static int orZero(Integer shortSide) {
        return shortSide == null ? 0 : shortSide;
    }

    /**
     * Per-thread state: file reader (with its decoders and RGB buffer), the shrink to the short side (null where
     * images are used as decoded) and resampler.
     */
    record Worker(ImageFileReader reader, ShortSideResize shrink, Resampler resampler) implements AutoCloseable {
        @Override
        public void close() {
            reader.close();
            if (shrink != null) {
                shrink.close();
            }
        }
    }

    private final class Writer implements ParallelSlotFiller.SampleWriter<Worker> {
        private final long imageBytes = layout().tensors().get(0).sampleBytes();

        @Override
        public Worker newContext() {
            return new Worker(
                    new ImageFileReader(decoder),
                    shortSide == 0 ? null : new ShortSideResize(shortSide),
                    new Resampler(transforms));
        }

        @Override
        public void write(Worker w, long epoch, int sampleId, SlotWriter slot, int index) throws IOException {
            RgbImage img = cache == null ? null : cache.lookup(epoch, sampleId);
            if (img == null) {
                try {
                    img = w.reader.read(folder.file(sampleId));
                    if (w.shrink != null) {
                        img = w.shrink.apply(img);
                    }
                    if (cache != null) {
                        cache.offer(sampleId, img);
                    }
                } finally {
                    if (cache != null) {
                        cache.loaded(sampleId); // another variant's worker waiting for this sample goes on
                    }
                }
            }
            SampleGeometry g = transforms.plan(
                    img.width(), img.height(), Seeds.forSample(sampler().seed(), epoch, sampleId));
            MemorySegment out = slot.tensor(0).asSlice(index * imageBytes, imageBytes);
            w.resampler.run(img, g, out);
            slot.tensor(1).setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index, folder.label(sampleId));
            if (sampleIds) {
                slot.tensor(2).setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index, sampleId);
            }
        }

        @Override
        public String describe(int sampleId) {
            return folder.file(sampleId).toString();
        }

        @Override
        public String hint() {
            return "check that the file is a valid JPEG or PNG image, or move it out of " + folder.root();
        }
    }

    /** Options of an {@link ImagePipelineSource}; defaults follow PyTorch's DataLoader where it has one. */
    public static final class Builder extends SamplingOptions<Builder> {
        private final Path root;
        private final ImageFolder folder;
        private TransformPipeline transforms = TransformPipeline.imagenetTrain(224);
        private ImageDecoder decoder;
        private long cacheBytes;
        private DecodedCache cache;
        private Integer cacheResize;
        private boolean sampleIds;

        private Builder(Path root, ImageFolder folder) {
            super(Math.max(1, Runtime.getRuntime().availableProcessors())); // decoding is the expensive part
            this.root = root;
            this.folder = folder;
        }

        /** What to do to each image; default {@link TransformPipeline#imagenetTrain(int) imagenetTrain(224)}. */
        public Builder transforms(TransformPipeline transforms) {
            this.transforms = Objects.requireNonNull(transforms, "transforms");
            return this;
        }

        /** The JPEG decoder; default {@link Decoders#best()}. PNG always goes through ImageIO. */
        public Builder decoder(ImageDecoder decoder) {
            this.decoder = Objects.requireNonNull(decoder, "decoder");
            return this;
        }

        /**
         * Keeps up to {@code bytes} of decoded images across epochs ({@link DecodedCache}): each image is decoded once
         * while it fits and only augmented in later epochs, the bytes served unchanged. Default 0: none.
         */
        public Builder cacheBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("a cache of " + bytes + " bytes; give 0 (none) or more");
            }
            this.cacheBytes = bytes;
            return this;
        }

        /**
         * Shrinks each decoded image to a shorter side of {@code shortSide} pixels (where it is longer; the aspect
         * ratio kept, {@link ShortSideResize}) before it is kept and augmented: the cache then holds about {@code
         * shortSide^2 / (width * height)} of the decoded bytes. Applied cached or not, so a cached run's bytes equal
         * an uncached run's with the same option; with a shared cache it must be the cache's own. Default: none.
         */
        public Builder cacheResize(int shortSide) {
            if (shortSide < 1) {
                throw new IllegalArgumentException("a --cache-resize short side of " + shortSide
                        + " pixels; give 1 or more, or leave it out to keep the decoded images at their size");
            }
            this.cacheResize = shortSide;
            return this;
        }

        /**
         * Makes batches hold {@value #INDEX} too: each sample's index in the folder, by which a consumer that augments
         * the samples itself seeds each one (the Python client's {@code SampleAugment}). Default: not.
         */
        public Builder sampleIds(boolean on) {
            this.sampleIds = on;
            return this;
        }

        /**
         * Reads and fills {@code shared}, a cache of this folder's decoded images that other pipelines (other
         * augmentations of the same images) use too; the caller closes it after every source.
         */
        public Builder cache(DecodedCache shared) {
            this.cache = Objects.requireNonNull(shared, "shared");
            return this;
        }

        /**
         * Scans the folder (if given as a path) and starts the worker threads.
         *
         * @throws IOException if the folder cannot be read or holds no images
         */
        public ImagePipelineSource build() throws IOException {
            if (workers < 1) {
                throw new IllegalArgumentException("workers must be at least 1, got " + workers);
            }
            return new ImagePipelineSource(this, folder != null ? folder : ImageFolder.scan(root));
        }
    }
}
