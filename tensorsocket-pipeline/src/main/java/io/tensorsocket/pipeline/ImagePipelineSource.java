package io.tensorsocket.pipeline;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Serves an {@link ImageFolder} through a {@link TransformPipeline}: worker threads decode and augment
 * each sample straight into the arena slot it belongs to. Batches hold {@value #IMAGE} (see
 * {@link TransformPipeline#spec}) and {@value #LABEL} (int64 per sample). Epoch {@code e} visits
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
    public static final String IMAGE = "image";
    public static final String LABEL = "label";

    private final ImageFolder folder;
    private final TransformPipeline transforms;
    private final ImageDecoder decoder;
    private final int workers;
    private final int prefetch;

    private ImagePipelineSource(Builder b, ImageFolder folder) {
        super(
                b.sampler(folder.size()),
                new BatchLayout(List.of(b.transforms.spec(IMAGE), TensorSpec.of(LABEL, DType.INT64)), b.batchSize));
        this.folder = folder;
        this.transforms = b.transforms;
        this.decoder = b.decoder != null ? b.decoder : Decoders.best();
        this.workers = b.workers;
        this.prefetch = b.prefetch;
        startWorkers(new Writer(), b.workers, b.prefetch);
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
                + " transforms=" + transforms;
        return Descriptions.limit(d);
    }

    /** Per-thread state: file reader (with its decoders and RGB buffer) and resampler. */
    record Worker(ImageFileReader reader, Resampler resampler) implements AutoCloseable {
        @Override
        public void close() {
            reader.close();
        }
    }

    private final class Writer implements ParallelSlotFiller.SampleWriter<Worker> {
        private final long imageBytes = layout().tensors().get(0).sampleBytes();

        @Override
        public Worker newContext() {
            return new Worker(new ImageFileReader(decoder), new Resampler(transforms));
        }

        @Override
        public void write(Worker w, long epoch, int sampleId, SlotWriter slot, int index) throws IOException {
            RgbImage img = w.reader.read(folder.file(sampleId));
            SampleGeometry g = transforms.plan(
                    img.width(), img.height(), Seeds.forSample(sampler().seed(), epoch, sampleId));
            MemorySegment out = slot.tensor(0).asSlice(index * imageBytes, imageBytes);
            w.resampler.run(img, g, out);
            slot.tensor(1).setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index, folder.label(sampleId));
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
