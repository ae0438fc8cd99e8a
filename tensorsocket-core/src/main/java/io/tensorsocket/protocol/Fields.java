package io.tensorsocket.protocol;

import io.tensorsocket.ProtocolException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The field types of {@link WireFormat}'s payloads, each read with its check: {@code str} (u16 byte count +
 * UTF-8, at most {@link WireFormat#MAX_STRING} bytes), {@code bool} (u8 0 or 1), counts and positions
 * (never negative), sizes (at least 1), rates (finite, never negative). A value that fails its check is the
 * peer's {@link ProtocolException}.
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
}
