package io.tensorsocket.pipeline;

import io.tensorsocket.BatchLayout;
import io.tensorsocket.DType;
import io.tensorsocket.SlotWriter;
import io.tensorsocket.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Serves an {@link IdxDataset} (MNIST, Fashion-MNIST): batches hold {@value #IMAGE}, either uint8
 * {@code [rows, cols]} or float32 {@code [1, rows, cols]} as {@code (v / 255 - mean) / std} (torchvision's
 * {@code ToTensor} then {@code Normalize}), and {@value #LABEL}, int64 per sample. Samples are written
 * straight into the claimed slot.
 *
 * <pre>{@code
 * BatchSource source = IdxSource.builder(IdxDataset.open(Path.of("/usr/share/datasets/fashion-mnist"), "train"))
 *         .floats(0.2860f, 0.3530f).batchSize(128).seed(1).build();
 * }</pre>
 */
public final class IdxSource extends SampledSource<float[]> {
    public static final String IMAGE = "image";
    public static final String LABEL = "label";

    private final IdxDataset data;
    private final DType dtype;
    private final float mean;
    private final float std;

    private IdxSource(Builder b) {
        super(
                b.sampler(b.data.size()),
                new BatchLayout(List.of(image(b.data, b.dtype), TensorSpec.of(LABEL, DType.INT64)), b.batchSize));
        this.data = b.data;
        this.dtype = b.dtype;
        this.mean = b.mean;
        this.std = b.std;
        startWorkers(new Writer(), b.workers, b.prefetch);
    }

    private static TensorSpec image(IdxDataset data, DType dtype) {
        return dtype == DType.UINT8
                ? TensorSpec.of(IMAGE, DType.UINT8, data.rows(), data.cols())
                : TensorSpec.of(IMAGE, DType.FLOAT32, 1, data.rows(), data.cols());
    }

    /** A builder for {@code data}. */
    public static Builder builder(IdxDataset data) {
        return new Builder(data);
    }

    @Override
    public String description() {
        Path f = data.imagesFile();
        // The normalisation comes first so that no long path can push it past the description's limit.
        String d = "idx " + (dtype == DType.FLOAT32 ? new Normalization(mean, std).describe() + " " : "")
                + "images=" + f + " samples=" + data.size() + " image="
                + layout().tensors().getFirst().describe()
                + " shuffle=" + sampler().shuffle() + " dropLast=" + sampler().dropLast() + " seed="
                + sampler().seed();
        return Descriptions.limit(d);
    }

    /** Per-thread state is one float row; the table is shared because it is read-only. */
    private final class Writer implements ParallelSlotFiller.SampleWriter<float[]> {
        private final int pixels = data.rows() * data.cols();
        private final float[] table = new float[256];

        Writer() {
            for (int v = 0; v < 256; v++) {
                table[v] = (v / 255f - mean) / std;
            }
        }

        @Override
        public float[] newContext() {
            return new float[pixels];
        }

        @Override
        public void write(float[] row, long epoch, int sampleId, SlotWriter slot, int index) {
            byte[] src = data.pixelData();
            int from = sampleId * pixels;
            MemorySegment image = slot.tensor(0);
            if (dtype == DType.UINT8) {
                MemorySegment.copy(src, from, image, ValueLayout.JAVA_BYTE, (long) index * pixels, pixels);
            } else {
                for (int i = 0; i < pixels; i++) {
                    row[i] = table[src[from + i] & 0xFF];
                }
                MemorySegment.copy(row, 0, image, ValueLayout.JAVA_FLOAT_UNALIGNED, (long) index * pixels * 4, pixels);
            }
            slot.tensor(1).setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index, data.label(sampleId));
        }

        @Override
        public String describe(int sampleId) {
            return data.imagesFile() + " image " + sampleId;
        }

        @Override
        public String hint() {
            return "fetch the IDX files again";
        }
    }

    /** Options of an {@link IdxSource}. */
    public static final class Builder extends SamplingOptions<Builder> {
        private final IdxDataset data;
        private DType dtype = DType.FLOAT32;
        private float mean = 0f;
        private float std = 1f;

        private Builder(IdxDataset data) {
            super(1); // one worker already outruns any consumer for 28x28 images
            this.data = Objects.requireNonNull(data, "data");
        }

        /** float32 {@code [1, rows, cols]} as {@code (v / 255 - mean) / std}; the default, with mean 0 and std 1. */
        public Builder floats(float mean, float std) {
            if (!(std > 0)) {
                throw new IllegalArgumentException("std must be positive, got " + std);
            }
            this.dtype = DType.FLOAT32;
            this.mean = mean;
            this.std = std;
            return this;
        }

        /** uint8 {@code [rows, cols]}, the bytes of the file. */
        public Builder uint8() {
            this.dtype = DType.UINT8;
            return this;
        }

        public IdxSource build() {
            return new IdxSource(this);
        }
    }
}
