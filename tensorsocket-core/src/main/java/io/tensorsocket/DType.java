package io.tensorsocket;

import java.util.Locale;

/**
 * Element types a {@link Tensor} can hold. Every type is stored little-endian; the {@link #code()}
 * is what travels on the wire, so codes never change once published.
 */
public enum DType {
    UINT8(1, 1),
    INT8(2, 1),
    INT16(3, 2),
    INT32(4, 4),
    INT64(5, 8),
    FLOAT16(6, 2),
    BFLOAT16(7, 2),
    FLOAT32(8, 4),
    FLOAT64(9, 8),
    /** One byte per element, 0 is false and anything else true. */
    BOOL(10, 1);

    private final int code;
    private final int byteSize;

    DType(int code, int byteSize) {
        this.code = code;
        this.byteSize = byteSize;
    }

    /** Stable wire code of this type. */
    public int code() {
        return code;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    /** Whether values of this type are floating point. */
    public boolean isFloatingPoint() {
        return this == FLOAT16 || this == BFLOAT16 || this == FLOAT32 || this == FLOAT64;
    }

    /** Lower-case name as PyTorch and NumPy spell it ({@code float32}, {@code uint8}, ...). */
    public String lowerName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Looks a type up by its wire code.
     *
     * @throws IllegalArgumentException if no type has that code
     */
    public static DType fromCode(int code) {
        for (DType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown dtype code " + code);
    }

    /**
     * Parses a type name as users write it: {@code float32}, {@code FLOAT32}, {@code float}, {@code half},
     * {@code bf16}, {@code long}, ...
     *
     * @throws IllegalArgumentException naming the accepted spellings
     */
    public static DType parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        return switch (n) {
            case "uint8", "u8", "byte" -> UINT8;
            case "int8", "i8" -> INT8;
            case "int16", "i16", "short" -> INT16;
            case "int32", "i32", "int" -> INT32;
            case "int64", "i64", "long" -> INT64;
            case "float16", "f16", "half" -> FLOAT16;
            case "bfloat16", "bf16" -> BFLOAT16;
            case "float32", "f32", "float" -> FLOAT32;
            case "float64", "f64", "double" -> FLOAT64;
            case "bool", "boolean" -> BOOL;
            default ->
                throw new IllegalArgumentException("unknown dtype '" + name
                        + "': use one of uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, bool");
        };
    }
}
