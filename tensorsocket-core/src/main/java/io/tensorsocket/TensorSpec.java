package io.tensorsocket;

import java.util.Arrays;
import java.util.Objects;

/**
 * Name, element type and per-sample shape of one tensor of a batch. A batch of {@code n} samples holds
 * this tensor with shape {@code [n, sampleShape...]}.
 */
public record TensorSpec(String name, DType dtype, long[] sampleShape) {
    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        if (name.isEmpty() || name.length() > 255) {
            throw new IllegalArgumentException("tensor name must have 1 to 255 characters: '" + name + "'");
        }
        sampleShape = sampleShape.clone();
        Tensor.numel(sampleShape);
        if (sampleShape.length > 16) {
            throw new IllegalArgumentException(
                    "tensor '" + name + "' has " + sampleShape.length + " dimensions; at most 16 are supported");
        }
    }

    /** Convenience: {@code TensorSpec.of("image", DType.FLOAT32, 3, 224, 224)}. */
    public static TensorSpec of(String name, DType dtype, long... sampleShape) {
        return new TensorSpec(name, dtype, sampleShape);
    }

    /** The spec a batch tensor follows: its name, dtype and shape without the first dimension. */
    public static TensorSpec of(String name, Tensor batchTensor) {
        return new TensorSpec(name, batchTensor.dtype(), batchTensor.sampleShape());
    }

    @Override
    public long[] sampleShape() {
        return sampleShape.clone();
    }

    /** Bytes of one sample of this tensor. */
    public long sampleBytes() {
        return Tensor.numel(sampleShape) * dtype.byteSize();
    }

    /** Shape of a batch of {@code n} samples. */
    public long[] batchShape(long n) {
        long[] s = new long[sampleShape.length + 1];
        s[0] = n;
        System.arraycopy(sampleShape, 0, s, 1, sampleShape.length);
        return s;
    }

    /** Whether {@code t} could be this tensor in a batch (same dtype and per-sample shape). */
    public boolean matches(Tensor t) {
        return t.dtype() == dtype && t.rank() == sampleShape.length + 1 && Arrays.equals(t.sampleShape(), sampleShape);
    }

    public String describe() {
        return name + ":" + dtype.lowerName() + Arrays.toString(sampleShape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorSpec s
                && s.name.equals(name)
                && s.dtype == dtype
                && Arrays.equals(s.sampleShape, sampleShape);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(sampleShape));
    }

    @Override
    public String toString() {
        return describe();
    }
}
