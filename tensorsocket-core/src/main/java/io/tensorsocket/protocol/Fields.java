package io.tensorsocket.protocol;

import io.tensorsocket.DType;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The field types of {@link WireFormat}'s payloads, each read with its check: {@code str} (u16 byte count +
 * UTF-8, at most {@link WireFormat#MAX_STRING} bytes), {@code bool} (u8 0 or 1), counts and positions
 * (never negative), sizes (at least 1), rates (finite, never negative), tensor lists and start policies. A value
 * that fails its check is the peer's {@link ProtocolException}.
 */
final class Fields {

    private Fields() {}

    static long nonNegative(long v) {
        if (v < 0) {
            throw new ProtocolException("a count or position holds " + v);
        }
        return v;
    }

    static int nonNegative(int v) {
        if (v < 0) {
            throw new ProtocolException("a count or position holds " + v);
        }
        return v;
    }

    static int positive(int v) {
        if (v < 1) {
            throw new ProtocolException("a size holds " + v);
        }
        return v;
    }

    static double rate(double v) {
        if (!Double.isFinite(v) || v < 0) {
            throw new ProtocolException("a rate holds " + v);
        }
        return v;
    }

    static double share(double v) {
        if (!(v >= 0 && v <= 1)) {
            throw new ProtocolException("a share holds " + v);
        }
        return v;
    }

    static byte bool(boolean v) {
        return (byte) (v ? 1 : 0);
    }

    static boolean getBool(ByteBuffer p) {
        int v = Byte.toUnsignedInt(p.get());
        if (v > 1) {
            throw new ProtocolException("boolean field holds " + v);
        }
        return v == 1;
    }

    static String truncate(String s) {
        return s.length() > WireFormat.MAX_STRING / 4 ? s.substring(0, WireFormat.MAX_STRING / 4) : s;
    }

    static void putString(ByteBuffer b, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > WireFormat.MAX_STRING) {
            throw new IllegalArgumentException(
                    "string of " + bytes.length + " bytes exceeds the protocol's " + WireFormat.MAX_STRING);
        }
        b.putShort((short) bytes.length).put(bytes);
    }

    static String getString(ByteBuffer p) {
        int len = Short.toUnsignedInt(p.getShort());
        if (len > WireFormat.MAX_STRING || len > p.remaining()) {
            throw new ProtocolException("string of " + len + " bytes where "
                    + Math.min(p.remaining(), WireFormat.MAX_STRING) + " are allowed");
        }
        ByteBuffer slice = p.slice(p.position(), len);
        p.position(p.position() + len);
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(slice)
                    .toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("string is not valid UTF-8");
        }
    }

    /** A tensor list: per tensor str name, u8 dtype, u8 rank, rank × i64 sampleDims (after a u16 count). */
    static void putTensors(ByteBuffer b, List<TensorSpec> tensors) {
        b.putShort((short) tensors.size());
        for (TensorSpec t : tensors) {
            putString(b, t.name());
            long[] dims = t.sampleShape();
            b.put((byte) t.dtype().code()).put((byte) dims.length);
            for (long d : dims) {
                b.putLong(d);
            }
        }
    }

    static List<TensorSpec> getTensors(ByteBuffer p, int count, String frame) {
        List<TensorSpec> tensors = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String name = getString(p);
            int dtype = Byte.toUnsignedInt(p.get());
            int rank = Byte.toUnsignedInt(p.get());
            if (rank > 16) {
                throw new ProtocolException(frame + " tensor '" + name + "' has rank " + rank);
            }
            long[] dims = new long[rank];
            for (int d = 0; d < rank; d++) {
                dims[d] = p.getLong();
            }
            try {
                tensors.add(new TensorSpec(name, DType.fromCode(dtype), dims));
            } catch (IllegalArgumentException | ArithmeticException e) {
                throw new ProtocolException(frame + " tensor '" + name + "' is invalid: " + e.getMessage());
            }
        }
        return tensors;
    }

    static StartPolicy startPolicy(byte b) {
        int v = Byte.toUnsignedInt(b);
        if (v >= StartPolicy.values().length) {
            throw new ProtocolException("HELLO holds unknown start policy " + v);
        }
        return StartPolicy.values()[v];
    }
}
