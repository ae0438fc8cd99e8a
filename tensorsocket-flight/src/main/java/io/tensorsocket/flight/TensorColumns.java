package io.tensorsocket.flight;

import io.tensorsocket.Batch;
import io.tensorsocket.DType;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * How a batch's tensors travel as an Arrow record batch: one row per sample, one column per tensor, in
 * the batch's tensor order, named as the tensor.
 *
 * <pre>
 *  batch of n samples                       Arrow record batch (length n)
 *  ─────────────────────                    ──────────────────────────────────────────────────────────────
 *  "data"  float32[n, 3, 224, 224]   ──►    "data":  FixedSizeList&lt;float32&gt;[150528]  (non-nullable)
 *                                             field metadata:
 *                                               ARROW:extension:name      arrow.fixed_shape_tensor
 *                                               ARROW:extension:metadata  {"shape":[3,224,224]}
 *                                               tensorsocket.dtype        float32
 *                                               tensorsocket.shape        3,224,224
 *                                             buffers: [list validity] [child validity] [child values]
 *                                                                                      └ the n·150528 floats,
 *                                                                                        row-major, LE: exactly
 *                                                                                        the tensor's bytes
 *  "label" int64[n]                  ──►    "label": int64                         (non-nullable, scalar
 *                                             field metadata: tensorsocket.dtype int64, tensorsocket.shape ""
 * </pre>
 *
 * Samples with a shape become a fixed-size list of the element type, marked as Arrow's canonical
 * {@code arrow.fixed_shape_tensor} extension type: the values buffer is the tensor's memory unchanged
 * (so it is sent from, and received into, one contiguous buffer without reshaping), any Arrow reader
 * that does not know the extension still sees a plain fixed-size list, and {@code pyarrow} turns it into
 * an {@code (n, 3, 224, 224)} array with {@code to_numpy_ndarray()}. Scalar samples become a plain
 * primitive column. Element types: uint8/int8/int16/int32/int64 map to Arrow integers, float16/32/64 to
 * Arrow floating point; bool (one byte per element here, one bit in Arrow) and bfloat16 (no Arrow type)
 * travel as uint8 and uint16 and {@code tensorsocket.dtype} says what they are: readers take the type
 * from {@code tensorsocket.dtype}. Validity buffers are all ones (no nulls).
 */
public final class TensorColumns {
    static final String DTYPE = "tensorsocket.dtype";
    static final String SHAPE = "tensorsocket.shape";
    private static final String EXT_NAME = "ARROW:extension:name";
    private static final String EXT_META = "ARROW:extension:metadata";
    private static final String FIXED_SHAPE_TENSOR = "arrow.fixed_shape_tensor";

    private TensorColumns() {}

    /** The schema of a stream of batches of {@code specs}, with {@code metadata} as its custom metadata. */
    public static Schema schema(List<TensorSpec> specs, Map<String, String> metadata) {
        List<Field> fields = new ArrayList<>();
        for (TensorSpec s : specs) {
            long[] shape = s.sampleShape();
            Map<String, String> meta = new LinkedHashMap<>();
            meta.put(DTYPE, s.dtype().lowerName());
            meta.put(SHAPE, Arrays.stream(shape).mapToObj(Long::toString).collect(Collectors.joining(",")));
            ArrowType element = arrowType(s.dtype());
            if (shape.length == 0) {
                fields.add(new Field(s.name(), new FieldType(false, element, null, meta), List.of()));
            } else {
                long k = Tensor.numel(shape);
                if (k > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("tensor '" + s.name() + "' has " + k
                            + " elements per sample, more than an Arrow fixed-size list holds");
                }
                meta.put(EXT_NAME, FIXED_SHAPE_TENSOR);
                meta.put(EXT_META, "{\"shape\":" + Arrays.toString(shape).replace(" ", "") + "}");
                Field child = new Field("item", new FieldType(false, element, null), List.of());
                fields.add(new Field(
                        s.name(),
                        new FieldType(false, new ArrowType.FixedSizeList((int) k), null, meta),
                        List.of(child)));
            }
        }
        return new Schema(fields, metadata);
    }

    /**
     * The tensors a schema carries.
     *
     * @throws IllegalArgumentException if a column is not one this class writes
     */
    public static List<TensorSpec> specs(Schema schema) {
        List<TensorSpec> specs = new ArrayList<>();
        for (Field f : schema.getFields()) {
            Map<String, String> meta = f.getMetadata();
            String dtype = meta == null ? null : meta.get(DTYPE);
            String shape = meta == null ? null : meta.get(SHAPE);
            if (dtype == null || shape == null) {
                throw new IllegalArgumentException("column '" + f.getName() + "' lacks " + DTYPE + "/" + SHAPE
                        + " metadata; it was not written by a TensorSocket server");
            }
            long[] dims = shape.isEmpty()
                    ? new long[0]
                    : Arrays.stream(shape.split(",")).mapToLong(Long::parseLong).toArray();
            TensorSpec spec = TensorSpec.of(f.getName(), DType.parse(dtype), dims);
            boolean list = f.getType() instanceof ArrowType.FixedSizeList l && l.getListSize() == Tensor.numel(dims);
            if (dims.length > 0 != list) {
                throw new IllegalArgumentException("column '" + f.getName() + "' has Arrow type " + f.getType()
                        + ", which does not hold samples of shape " + Arrays.toString(dims));
            }
            specs.add(spec);
        }
        return specs;
    }

    static ArrowType arrowType(DType t) {
        return switch (t) {
            case UINT8, BOOL -> new ArrowType.Int(8, false);
            case INT8 -> new ArrowType.Int(8, true);
            case INT16 -> new ArrowType.Int(16, true);
            case BFLOAT16 -> new ArrowType.Int(16, false);
            case INT32 -> new ArrowType.Int(32, true);
            case INT64 -> new ArrowType.Int(64, true);
            case FLOAT16 -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
            case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        };
    }

    /**
     * Loads batches into a {@link VectorSchemaRoot} for sending. Each tensor is copied once, into a buffer
     * of the allocator's (recycled, so the copy runs at memory speed), and the batch can be released at
     * once: a slow or vanished remote consumer never holds a slot of the arena, and gRPC never reads memory
     * the producer may refill. The root owns the copies until the next {@link #load} or {@link #clear()};
     * with Flight's zero-copy write gRPC then holds them until they are on the socket.
     */
    static final class Outbound implements AutoCloseable {
        private final BufferAllocator allocator;
        private final VectorSchemaRoot root;
        private final VectorLoader loader;
        private final List<TensorSpec> specs;
        private ArrowBuf ones = null;

        Outbound(BufferAllocator allocator, Schema schema, List<TensorSpec> specs) {
            this.allocator = allocator;
            this.root = VectorSchemaRoot.create(schema, allocator);
            this.loader = new VectorLoader(root);
            this.specs = specs;
        }

        VectorSchemaRoot root() {
            return root;
        }

        /** Copies {@code batch} into the root; the batch may be closed as soon as this returns. */
        void load(Batch batch) {
            int n = batch.size();
            List<ArrowFieldNode> nodes = new ArrayList<>();
            List<ArrowBuf> buffers = new ArrayList<>();
            List<ArrowBuf> staged = new ArrayList<>();
            long maxElements = 1;
            for (TensorSpec s : specs) {
                maxElements = Math.max(maxElements, Tensor.numel(s.sampleShape()));
            }
            ensureOnes(n * maxElements); // before slicing: growing frees the old buffer
            try {
                for (TensorSpec s : specs) {
                    long k = Tensor.numel(s.sampleShape());
                    if (s.sampleShape().length > 0) {
                        nodes.add(new ArrowFieldNode(n, 0));
                        buffers.add(ones(n));
                    }
                    nodes.add(new ArrowFieldNode(n * k, 0));
                    buffers.add(ones(n * k));
                    MemorySegment data = batch.tensor(s.name()).data();
                    ArrowBuf buf = allocator.buffer(Math.max(data.byteSize(), 1));
                    staged.add(buf);
                    MemorySegment.copy(
                            data,
                            0,
                            MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(data.byteSize()),
                            0,
                            data.byteSize());
                    buffers.add(buf.slice(0, data.byteSize()));
                }
                try (ArrowRecordBatch arb = new ArrowRecordBatch(n, nodes, buffers)) {
                    loader.load(arb);
                }
            } finally {
                staged.forEach(ArrowBuf::close); // the root holds its own references now
            }
        }

        private ArrowBuf ones(long bits) {
            return ones.slice(0, (bits + 7) / 8);
        }

        private void ensureOnes(long bits) {
            long bytes = (bits + 7) / 8;
            if (ones == null || ones.capacity() < bytes) {
                if (ones != null) {
                    ones.close();
                }
                ones = allocator.buffer(Math.max(bytes, 64));
                ones.setOne(0, ones.capacity());
            }
        }

        /** Drops the root's references to the last batch. */
        void clear() {
            root.clear();
        }

        @Override
        public void close() {
            root.close();
            if (ones != null) {
                ones.close();
                ones = null;
            }
        }
    }

    /** The memory of column {@code i} of a received root: the tensor's bytes for the root's rows. */
    static MemorySegment values(VectorSchemaRoot root, int column, TensorSpec spec) {
        FieldVector v = root.getVector(column);
        FieldVector values = v instanceof FixedSizeListVector l ? l.getDataVector() : v;
        long bytes = (long) root.getRowCount() * spec.sampleBytes();
        ArrowBuf buf = values.getDataBuffer();
        if (buf.capacity() < bytes) {
            throw new IllegalStateException("column '" + spec.name() + "' carries " + buf.capacity() + " bytes for "
                    + root.getRowCount() + " samples of " + spec.sampleBytes() + " bytes");
        }
        return MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(bytes);
    }
}
