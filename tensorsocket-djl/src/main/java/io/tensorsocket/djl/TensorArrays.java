package io.tensorsocket.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.tensorsocket.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** NDArrays that are views of TensorSocket tensors. */
public final class TensorArrays {
    private TensorArrays() {}

    /**
     * An NDArray over {@code tensor}'s memory, without a copy, attached to {@code manager}. Close the
     * manager before the tensor's batch is released: the array does not know when its memory goes away.
     * The array is read-only; modifying it in place is not allowed.
     */
    public static NDArray view(NDManager manager, Tensor tensor) {
        // A direct, native-order buffer starting at position 0 is what DJL hands to the engine as is.
        ByteBuffer view = tensor.data()
                .asByteBuffer()
                .order(ByteOrder.nativeOrder())
                .slice()
                .order(ByteOrder.nativeOrder());
        return manager.create(view, new Shape(tensor.shape()), DjlTypes.toDjl(tensor.dtype()));
    }
}
