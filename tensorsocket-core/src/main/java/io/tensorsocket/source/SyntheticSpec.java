package io.tensorsocket.source;

import io.tensorsocket.DType;
import io.tensorsocket.Tensor;
import io.tensorsocket.stream.ChunkedShuffle;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Parameters of the synthetic data set and the function that generates it: the content of every
 * sample is a deterministic function of (seed, sample id), so a consumer that knows the parameters can
 * check every byte it receives.
 *
 * <p>Written as {@code samples=S,shape=3x32x32,dtype=float32,seed=K[,classes=C][,order=O]}. {@code order} says who
 * orders the epochs of the stream this text describes: {@code seeded} (the default), epoch {@code e} in
 * {@link #order(long)}; {@code producer}, the producer of a {@link SyntheticSource}, which keeps chunks of the previous
 * epoch while consumers that joined mid-epoch are attached ({@link io.tensorsocket.IndexedSource}).
 */
public record SyntheticSpec(long samples, long[] shape, DType dtype, long seed, int classes) {
    /** Prefix of a synthetic source's description. */
    public static final String PREFIX = "synthetic:";

    public SyntheticSpec {
        if (samples < 1) {
            throw new IllegalArgumentException("synthetic samples must be at least 1, got " + samples);
        }
        if (samples > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("synthetic samples must be at most " + Integer.MAX_VALUE);
        }
        shape = shape.clone();
        Tensor.numel(shape);
        if (classes < 1) {
            throw new IllegalArgumentException("synthetic classes must be at least 1, got " + classes);
        }
    }

    /**
     * Parses {@code samples=S,shape=AxBxC,dtype=T,seed=K[,classes=C]}; {@code shape}, {@code dtype},
     * {@code seed} and {@code classes} default to 3x32x32, float32, 0 and 10.
     *
     * @throws IllegalArgumentException naming the bad part
     */
    public static SyntheticSpec parse(String text) {
        Map<String, String> kv = parameters(text);
        if (!kv.containsKey("samples")) {
            throw new IllegalArgumentException("synthetic data needs samples=N");
        }
        try {
            long samples = Long.parseLong(kv.get("samples"));
            long[] shape = parseShape(kv.getOrDefault("shape", "3x32x32"));
            DType dtype = DType.parse(kv.getOrDefault("dtype", "float32"));
            long seed = Long.parseLong(kv.getOrDefault("seed", "0"));
            int classes = Integer.parseInt(kv.getOrDefault("classes", "10"));
            return new SyntheticSpec(samples, shape, dtype, seed, classes);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "synthetic parameters '" + text + "' hold a non-number: " + e.getMessage());
        }
    }

    /**
     * Parses a sample shape written as its dimensions joined by {@code x} ({@code 3x32x32}), the form
     * {@link #format()} writes.
     *
     * @throws IllegalArgumentException if a dimension is not a whole number of at least 1
     */
    public static long[] parseShape(String text) {
        try {
            long[] dims = Arrays.stream(text.split("x", -1))
                    .mapToLong(Long::parseLong)
                    .toArray();
            if (Arrays.stream(dims).allMatch(d -> d >= 1)) {
                return dims;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(
                "a shape is its dimensions, each at least 1, joined by x, such as 3x32x32, not '" + text + "'");
    }

    /** Whether a source description's epochs are in {@link #order(long)}: its {@code order} is not {@code producer}. */
    public static boolean seededOrder(String description) {
        return !PRODUCER_ORDER.equals(parameters(description).get("order"));
    }

    /**
     * Whether {@code text} asks for {@code order=seeded} in so many words: a source to serve that way keeps its own
     * seeded order, and its consumers joining mid-epoch roll ({@link SyntheticSource#seeded}).
     */
    public static boolean asksForSeededOrder(String text) {
        return "seeded".equals(parameters(text).get("order"));
    }

    /** What a {@link SyntheticSource}'s description adds to {@link #format()}: its producer chooses the orders. */
    static final String PRODUCER_ORDER = "producer";

    private static Map<String, String> parameters(String text) {
        String t = text.startsWith(PREFIX) ? text.substring(PREFIX.length()) : text;
        Map<String, String> kv = new LinkedHashMap<>();
        for (String part : t.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException("synthetic parameter '" + part + "' is not key=value");
            }
            kv.put(
                    part.substring(0, eq).trim().toLowerCase(Locale.ROOT),
                    part.substring(eq + 1).trim());
        }
        for (String k : kv.keySet()) {
            if (!List.of("samples", "shape", "dtype", "seed", "classes", "order")
                    .contains(k)) {
                throw new IllegalArgumentException(
                        "unknown synthetic parameter '" + k + "': use samples, shape, dtype, seed, classes, order");
            }
        }
        String order = kv.getOrDefault("order", "seeded");
        if (!order.equals("seeded") && !order.equals(PRODUCER_ORDER)) {
            throw new IllegalArgumentException("synthetic order is seeded or producer, not '" + order + "'");
        }
        return kv;
    }

    /** The text form, as {@link #parse(String)} reads it, with the description prefix. */
    public String format() {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < shape.length; i++) {
            s.append(i == 0 ? "" : "x").append(shape[i]);
        }
        return PREFIX + "samples=" + samples + ",shape=" + s + ",dtype=" + dtype.lowerName() + ",seed=" + seed
                + ",classes=" + classes;
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** Bytes of one sample's data tensor. */
    public long sampleBytes() {
        return Tensor.numel(shape) * dtype.byteSize();
    }

    /** The label of sample {@code id}. */
    public long label(long id) {
        return Long.remainderUnsigned(mix(seed ^ 0x5DEECE66DL, id), classes);
    }

    /**
     * The order of sample ids in epoch {@code epoch} when no consumer joined mid-epoch: a permutation of
     * {@code [0, samples)}. (With consumers that did, the producer keeps chunks of the previous epoch, see
     * {@link io.tensorsocket.IndexedSource}.)
     */
    public int[] order(long epoch) {
        return ChunkedShuffle.first((int) samples, shuffleRandom(epoch));
    }

    /** The randomness of epoch {@code epoch}'s shuffle. */
    public SplittableRandom shuffleRandom(long epoch) {
        return new SplittableRandom(mix(seed, epoch + 0x9E3779B97F4A7C15L));
    }

    /** Writes sample {@code id}'s data into {@code dst} ({@link #sampleBytes()} bytes). */
    public void fill(long id, MemorySegment dst) {
        long state = mix(seed, id);
        long n = Tensor.numel(shape);
        switch (dtype) {
            case FLOAT32 -> {
                for (long i = 0; i < n; i++) {
                    state += GOLDEN;
                    dst.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, unit(state));
                }
            }
            case FLOAT64 -> {
                for (long i = 0; i < n; i++) {
                    state += GOLDEN;
                    dst.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, (finish(state) >>> 11) * 0x1.0p-53);
                }
            }
            case FLOAT16 -> {
                for (long i = 0; i < n; i++) {
                    state += GOLDEN;
                    dst.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16(unit(state)));
                }
            }
            case BFLOAT16 -> {
                for (long i = 0; i < n; i++) {
                    state += GOLDEN;
                    dst.setAtIndex(
                            ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (Float.floatToRawIntBits(unit(state)) >>> 16));
                }
            }
            case BOOL -> {
                for (long i = 0; i < n; i++) {
                    state += GOLDEN;
                    dst.set(ValueLayout.JAVA_BYTE, i, (byte) (finish(state) & 1));
                }
            }
            default -> {
                // integer types: raw random bits, eight bytes at a time
                long bytes = n * dtype.byteSize();
                long i = 0;
                for (; i + 8 <= bytes; i += 8) {
                    state += GOLDEN;
                    dst.set(ValueLayout.JAVA_LONG_UNALIGNED, i, finish(state));
                }
                state += GOLDEN;
                long last = finish(state);
                for (; i < bytes; i++, last >>>= 8) {
                    dst.set(ValueLayout.JAVA_BYTE, i, (byte) last);
                }
            }
        }
    }

    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private static float unit(long state) {
        return (finish(state) >>> 40) * 0x1.0p-24f;
    }

    private static long finish(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long mix(long a, long b) {
        return finish(finish(a + GOLDEN) ^ (b * GOLDEN + 0x632BE59BD9B4E019L));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SyntheticSpec s
                && s.samples == samples
                && Arrays.equals(s.shape, shape)
                && s.dtype == dtype
                && s.seed == seed
                && s.classes == classes;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(samples * 31 + seed) ^ Arrays.hashCode(shape) ^ dtype.hashCode();
    }

    @Override
    public String toString() {
        return format();
    }
}
