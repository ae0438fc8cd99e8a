package io.tensorsocket;

import io.tensorsocket.arena.BulkCopy;
import io.tensorsocket.lease.Lease;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * An n-dimensional array: a {@link DType}, a shape, and little-endian data in a {@link MemorySegment}.
 * In a {@link Batch} the first dimension is the batch dimension.
 *
 * <p>A tensor received by a consumer is a view into shared memory (or into a consumer-owned buffer
 * when its batch spans slots). It is valid as long as its batch; afterwards every accessor throws
 * {@link BatchReleasedException}.
 */
public final class Tensor {
    static {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new ExceptionInInitializerError(
                    "TensorSocket stores tensors little-endian and needs a little-endian platform");
        }
    }

    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private final DType dtype;
    private final long[] shape;
    private final MemorySegment data;
    private final Lease lease;

    Tensor(DType dtype, long[] shape, MemorySegment data, Lease lease) {
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = shape.clone();
        this.lease = lease;
        long expected = numel(this.shape) * dtype.byteSize();
        if (data.byteSize() != expected) {
            throw new IllegalArgumentException("tensor of " + dtype.lowerName() + Arrays.toString(shape) + " needs "
                    + expected + " bytes but the data has " + data.byteSize());
        }
        this.data = data;
    }

    /**
     * Wraps existing little-endian data without copying. The caller keeps the memory alive while the
     * tensor is in use.
     */
    public static Tensor of(DType dtype, long[] shape, MemorySegment data) {
        return new Tensor(dtype, shape, data, Lease.OWNED);
    }

    /** Wraps a float array (float32) without copying. */
    public static Tensor ofFloats(float[] values, long... shape) {
        return of(DType.FLOAT32, shape, MemorySegment.ofArray(values));
    }

    /** Wraps a long array (int64) without copying. */
    public static Tensor ofLongs(long[] values, long... shape) {
        return of(DType.INT64, shape, MemorySegment.ofArray(values));
    }

    /** Wraps an int array (int32) without copying. */
    public static Tensor ofInts(int[] values, long... shape) {
        return of(DType.INT32, shape, MemorySegment.ofArray(values));
    }

    /** Wraps a byte array as {@code dtype} (uint8, int8 or bool) without copying. */
    public static Tensor ofBytes(DType dtype, byte[] values, long... shape) {
        if (dtype.byteSize() != 1) {
            throw new IllegalArgumentException(dtype.lowerName() + " is not a one-byte type");
        }
        return of(dtype, shape, MemorySegment.ofArray(values));
    }

    /** Number of elements of a shape. */
    public static long numel(long[] shape) {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public DType dtype() {
        return dtype;
    }

    /** A copy of the shape. */
    public long[] shape() {
        return shape.clone();
    }

    /** Size of dimension {@code dim}. */
    public long dim(int dim) {
        return shape[dim];
    }

    /** Number of dimensions. */
    public int rank() {
        return shape.length;
    }

    /** The shape without its first (batch) dimension. */
    public long[] sampleShape() {
        return Arrays.copyOfRange(shape, Math.min(1, shape.length), shape.length);
    }

    /** Number of elements. */
    public long numel() {
        return numel(shape);
    }

    /** Size of the data in bytes. */
    public long byteSize() {
        return data.byteSize();
    }

    /** Bytes of one entry along the first dimension. */
    public long sampleBytes() {
        return shape.length == 0 ? data.byteSize() : numel(sampleShape()) * dtype.byteSize();
    }

    /**
     * The data itself. For a received tensor this is a read-only view of shared memory, valid as long as
     * its batch; the JDK refuses access through it once the batch is released (when the consumer had to
     * wait for the next batch, from its following call on: until then it still reads this batch's bytes, as
     * its memory goes back to the producer only after that).
     */
    public MemorySegment data() {
        lease.check();
        return data;
    }

    /** Whether the tensor's batch was released. */
    public boolean isReleased() {
        return lease.isReleased();
    }

    /** Entries {@code [from, to)} of the first dimension, as a view sharing this tensor's lifetime. */
    public Tensor slice(long from, long to) {
        lease.check();
        if (shape.length == 0 || from < 0 || to > shape[0] || from > to) {
            throw new IndexOutOfBoundsException("slice [" + from + ", " + to + ") of shape " + Arrays.toString(shape));
        }
        long[] s = shape.clone();
        s[0] = to - from;
        long sb = sampleBytes();
        return new Tensor(dtype, s, data.asSlice(from * sb, (to - from) * sb), lease);
    }

    private long offset(long index, int size) {
        lease.check();
        long off = index * size;
        if (index < 0 || off + size > data.byteSize()) {
            throw new IndexOutOfBoundsException("element " + index + " of a tensor with " + numel() + " elements");
        }
        return off;
    }

    /** Element {@code index} (flat, row-major) of a one-byte tensor. */
    public byte getByte(long index) {
        requireSize(1);
        return data.get(ValueLayout.JAVA_BYTE, offset(index, 1));
    }

    /** Element {@code index} of an int16 tensor. */
    public short getShort(long index) {
        requireSize(2);
        return data.get(I16, offset(index, 2));
    }

    /** Element {@code index} of an int32 tensor. */
    public int getInt(long index) {
        require(DType.INT32);
        return data.get(I32, offset(index, 4));
    }

    /** Element {@code index} as a long, for any integer or bool type (uint8 is read unsigned). */
    public long getLong(long index) {
        return switch (dtype) {
            case UINT8, BOOL -> Byte.toUnsignedLong(getByte(index));
            case INT8 -> getByte(index);
            case INT16 -> getShort(index);
            case INT32 -> getInt(index);
            case INT64 -> data.get(I64, offset(index, 8));
            default -> throw new UnsupportedOperationException("getLong on a " + dtype.lowerName() + " tensor");
        };
    }

    /** Element {@code index} as a float, for float16, bfloat16 and float32 tensors. */
    public float getFloat(long index) {
        return switch (dtype) {
            case FLOAT32 -> data.get(F32, offset(index, 4));
            case FLOAT16 -> Float.float16ToFloat(data.get(I16, offset(index, 2)));
            case BFLOAT16 -> Float.intBitsToFloat((data.get(I16, offset(index, 2)) & 0xFFFF) << 16);
            default -> throw new UnsupportedOperationException("getFloat on a " + dtype.lowerName() + " tensor");
        };
    }

    /** Element {@code index} as a double, for any type. */
    public double getDouble(long index) {
        return switch (dtype) {
            case FLOAT64 -> data.get(F64, offset(index, 8));
            case FLOAT16, BFLOAT16, FLOAT32 -> getFloat(index);
            default -> getLong(index);
        };
    }

    /** Element {@code index} of a bool tensor. */
    public boolean getBoolean(long index) {
        require(DType.BOOL);
        return getByte(index) != 0;
    }

    /** A copy of the raw little-endian bytes. */
    public byte[] toByteArray() {
        lease.check();
        return data.toArray(ValueLayout.JAVA_BYTE);
    }

    /** A copy of a float32 tensor's elements. */
    public float[] toFloatArray() {
        require(DType.FLOAT32);
        lease.check();
        return data.toArray(F32);
    }

    /** A copy of an int64 tensor's elements. */
    public long[] toLongArray() {
        require(DType.INT64);
        lease.check();
        return data.toArray(I64);
    }

    /** A copy of an int32 tensor's elements. */
    public int[] toIntArray() {
        require(DType.INT32);
        lease.check();
        return data.toArray(I32);
    }

    /**
     * Copies the data into {@code target} at {@code offset}; a large native copy goes through {@link BulkCopy},
     * which writes past the cache where the C library does.
     */
    public void copyTo(MemorySegment target, long offset) {
        lease.check();
        BulkCopy.copy(data, 0, target, offset, data.byteSize());
    }

    /** A tensor with its own heap copy of the data, valid after this one's batch is released. */
    public Tensor copy() {
        lease.check();
        byte[] bytes = data.toArray(ValueLayout.JAVA_BYTE);
        return of(dtype, shape, MemorySegment.ofArray(bytes));
    }

    private void require(DType t) {
        if (dtype != t) {
            throw new UnsupportedOperationException("this is a " + dtype.lowerName() + " tensor, not " + t.lowerName());
        }
    }

    private void requireSize(int size) {
        if (dtype.byteSize() != size) {
            throw new UnsupportedOperationException(
                    "this is a " + dtype.lowerName() + " tensor, not a " + size + "-byte type");
        }
    }

    @Override
    public String toString() {
        return "Tensor[" + dtype.lowerName() + Arrays.toString(shape) + "]";
    }
}
