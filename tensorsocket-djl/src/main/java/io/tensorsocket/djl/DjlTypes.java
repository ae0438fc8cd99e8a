package io.tensorsocket.djl;

import ai.djl.ndarray.types.DataType;
import io.tensorsocket.DType;

/** The element types TensorSocket and DJL share, mapped both ways. */
final class DjlTypes {
    private DjlTypes() {}

    static DataType toDjl(DType t) {
        return switch (t) {
            case UINT8 -> DataType.UINT8;
            case INT8 -> DataType.INT8;
            case INT16 -> DataType.INT16;
            case INT32 -> DataType.INT32;
            case INT64 -> DataType.INT64;
            case FLOAT16 -> DataType.FLOAT16;
            case BFLOAT16 -> DataType.BFLOAT16;
            case FLOAT32 -> DataType.FLOAT32;
            case FLOAT64 -> DataType.FLOAT64;
            case BOOL -> DataType.BOOLEAN;
        };
    }

    static DType fromDjl(DataType t) {
        return switch (t) {
            case UINT8 -> DType.UINT8;
            case INT8 -> DType.INT8;
            case INT16 -> DType.INT16;
            case INT32 -> DType.INT32;
            case INT64 -> DType.INT64;
            case FLOAT16 -> DType.FLOAT16;
            case BFLOAT16 -> DType.BFLOAT16;
            case FLOAT32 -> DType.FLOAT32;
            case FLOAT64 -> DType.FLOAT64;
            case BOOLEAN -> DType.BOOL;
            default ->
                throw new IllegalArgumentException("DJL type " + t + " has no TensorSocket counterpart; convert it to"
                        + " a numeric type (e.g. toType(DataType.FLOAT32, false)) in the dataset");
        };
    }
}
