package io.tensorsocket.protocol;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.DType;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class WireFormatTest {

    static final List<Message> ALL = List.of(
            new Message.Hello(64, true, 1234, "python3 train.py — ü"),
            new Message.Hello(64, true, 1234, "late", StartPolicy.NEXT_EPOCH_START),
            new Message.Heartbeat(),
            new Message.Welcome(
                    -77,
                    3,
                    999,
                    "/dev/shm/tensorsocket-u/n/arena",
                    8,
                    1 << 20,
                    64,
                    List.of(TensorSpec.of("image", DType.FLOAT32, 3, 224, 224), TensorSpec.of("label", DType.INT64)),
                    50000,
                    0,
                    StartMode.ROLLING,
                    4,
                    1024,
                    "synthetic:samples=5"),
            new Message.BatchReady(1L << 40, 7, 3, 12, 768, 64),
            new Message.Release(42),
            new Message.EpochEnd(2, 782, 50000),
            new Message.EndOfStream(10),
            new Message.Error(Message.ErrorCode.EVICTED, "too slow"),
            new Message.Bye(),
            new Message.StatusRequest(),
            new Message.Status(status(2, 1234.5)),
            new Message.Progress(3, 12_800, 5_000_000_000L, 7_000_000_000L),
            new Message.FeederHello(
                    5,
                    "feed",
                    32,
                    990,
                    0,
                    "map-style",
                    List.of(TensorSpec.of("x", DType.FLOAT32, 3)),
                    1000,
                    true,
                    77,
                    2),
            new Message.EpochOrder(2, 0, 4, new int[] {3, 1, 0, 2}),
            new Message.OrderRequest(2));

    static ProducerStatus status(int consumers, double rate) {
        List<ProducerStatus.Consumer> cs = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            cs.add(new ProducerStatus.Consumer(
                    i + 1,
                    4000 + i,
                    "alice",
                    32 * (i + 1),
                    i % 2 == 0,
                    i % 2 == 0 ? StartMode.EPOCH_START : StartMode.ROLLING,
                    1,
                    60_000 + i,
                    128,
                    2,
                    900,
                    i > 0,
                    57_000,
                    rate / 2,
                    3_000_000_000L,
                    9_000_000_000L,
                    12_000_000_000L,
                    i == 0 ? "/usr/bin/java" : "flight 10.0.0.7:51234",
                    i % 3 == 0));
        }
        return new ProducerStatus(
                77,
                "imagenet",
                "image-folder root=/data ü",
                ProducerStatus.State.SERVING,
                64,
                50_000,
                0,
                1,
                10_000,
                937,
                59_968,
                rate,
                12,
                38L << 20,
                5,
                2,
                2,
                30_000_000_000L,
                consumers,
                3,
                StartMode.ROLLING,
                new ProducerStatus.Cache(64L << 20, 40L << 20, 70, 100, 330, 100),
                cs,
                null);
    }

    static Message roundTrip(Message m) {
        ByteBuffer b = WireFormat.encode(m);
        WireFormat.Header h = WireFormat.decodeHeader(b);
        assertEquals(WireFormat.VERSION, h.version());
        assertEquals(b.remaining(), h.payloadBytes());
        return WireFormat.decodePayload(h.type(), b.slice());
    }

    @Test
    void everyMessageSurvivesARoundTrip() {
        for (Message m : ALL) {
            Message back = roundTrip(m);
            if (m instanceof Message.Welcome w) {
                Message.Welcome v = (Message.Welcome) back;
                assertEquals(w.tensors(), v.tensors());
                assertEquals(w.startMode(), v.startMode());
                assertEquals(w.arenaPath(), v.arenaPath());
                assertEquals(w.startSample(), v.startSample());
            } else {
                assertEquals(m, back);
            }
        }
    }

    @Test
    void aStatusListsAtMost256ConsumersAndStaysInOneFrame() {
        ProducerStatus big = status(1000, 10);
        ProducerStatus back = ((Message.Status) roundTrip(new Message.Status(big))).status();
        assertEquals(1000, back.consumersAttached());
        assertEquals(ProducerStatus.MAX_LISTED, back.consumers().size());
        assertEquals(big.consumers().get(255), back.consumers().get(255));
    }

    @Test
    void aStatusWithAnInvalidRateOrCountIsRejected() {
        for (double bad : new double[] {Double.NaN, -1, Double.POSITIVE_INFINITY}) {
            ByteBuffer b = WireFormat.encode(new Message.Status(status(1, bad)));
            WireFormat.Header h = WireFormat.decodeHeader(b);
            assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(h.type(), b.slice()), "rate " + bad);
        }
        ByteBuffer p = WireFormat.encode(new Message.Progress(-1, 0, 0, 0));
        WireFormat.Header h = WireFormat.decodeHeader(p);
        assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(h.type(), p.slice()));
    }

    @Test
    void aStatusWhoseCacheHoldsMoreThanItCanIsRejected() {
        ProducerStatus s = status(1, 10);
        for (ProducerStatus.Cache bad :
                List.of(new ProducerStatus.Cache(10, 11, 1, 1, 0, 0), new ProducerStatus.Cache(10, 5, 3, 2, 0, 0))) {
            ProducerStatus with = new ProducerStatus(
                    s.producerPid(),
                    s.name(),
                    s.source(),
                    s.state(),
                    s.producerBatchSize(),
                    s.samplesPerEpoch(),
                    s.epochs(),
                    s.epoch(),
                    s.sample(),
                    s.batchesPublished(),
                    s.samplesPublished(),
                    s.samplesPerSecond(),
                    s.slotCount(),
                    s.slotBytes(),
                    s.slotsInUse(),
                    s.rubberBand(),
                    s.windowBatches(),
                    s.uptimeNanos(),
                    s.consumersAttached(),
                    s.evictions(),
                    s.midEpoch(),
                    bad,
                    s.consumers(),
                    s.seed());
            ByteBuffer b = WireFormat.encode(new Message.Status(with));
            WireFormat.Header h = WireFormat.decodeHeader(b);
            ProtocolException e =
                    assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(h.type(), b.slice()));
            assertEquals("STATUS holds a cache holding more than it can", e.getMessage(), bad.toString());
        }
    }

    @Test
    void aStatusWithAPaceShareOutside0To1IsRejectedSayingSo() {
        ByteBuffer b = WireFormat.encode(new Message.Status(status(1, 10)));
        // the last consumer's pace share; its lane, lane samples, stream end and resuming follow, then the seed
        b.putDouble(b.limit() - Double.BYTES - Integer.BYTES - Long.BYTES - Long.BYTES - 1 - 1 - Long.BYTES, 1.5);
        WireFormat.Header h = WireFormat.decodeHeader(b);
        ProtocolException e =
                assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(h.type(), b.slice()));
        assertEquals("a share holds 1.5", e.getMessage());
    }

    @Test
    void everyTruncationOfEveryMessageIsRejected() {
        for (Message m : ALL) {
            ByteBuffer b = WireFormat.encode(m);
            WireFormat.Header h = WireFormat.decodeHeader(b);
            ByteBuffer payload = b.slice();
            for (int cut = 0; cut < payload.remaining(); cut++) {
                ByteBuffer truncated = payload.slice(0, cut);
                assertThrows(
                        ProtocolException.class,
                        () -> WireFormat.decodePayload(h.type(), truncated),
                        m + " cut at " + cut);
            }
        }
    }

    @Test
    void trailingBytesAreRejected() {
        ByteBuffer b = ByteBuffer.allocate(9)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(5)
                .put((byte) 1)
                .flip();
        ProtocolException e = assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(4, b));
        assertTrue(e.getMessage().contains("trailing"));
    }

    @Test
    void badMagicOversizeAndUnknownTypeAreRejectedFromTheHeader() {
        ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x12345678)
                .putShort((short) 1)
                .put((byte) 1)
                .put((byte) 0)
                .putInt(4)
                .flip();
        assertTrue(assertThrows(ProtocolException.class, () -> WireFormat.decodeHeader(b))
                .getMessage()
                .contains("magic"));

        b.clear();
        b.putInt(WireFormat.MAGIC)
                .putShort((short) 1)
                .put((byte) 3)
                .put((byte) 0)
                .putInt(-1)
                .flip();
        assertTrue(assertThrows(ProtocolException.class, () -> WireFormat.decodeHeader(b))
                .getMessage()
                .contains("limit"));

        b.clear();
        b.putInt(WireFormat.MAGIC)
                .putShort((short) WireFormat.VERSION)
                .put((byte) 99)
                .put((byte) 0)
                .putInt(0)
                .flip();
        assertTrue(assertThrows(ProtocolException.class, () -> WireFormat.decodeHeader(b))
                .getMessage()
                .contains("type 99"));
    }

    @Test
    void aStringLongerThanItsPayloadIsRejectedWithoutAllocatingIt() {
        ByteBuffer b = ByteBuffer.allocate(8)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(7)
                .putShort((short) 0xFFFF)
                .flip();
        ProtocolException e = assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(7, b));
        assertTrue(e.getMessage().contains("string"), e.getMessage());
    }

    @Test
    void invalidUtf8AndBadBooleansAreRejected() {
        ByteBuffer bad = ByteBuffer.allocate(8)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(7)
                .putShort((short) 2)
                .put((byte) 0xC3)
                .put((byte) 0x28)
                .flip();
        assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(7, bad));
        ByteBuffer hello = ByteBuffer.allocate(15)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(8)
                .put((byte) 7)
                .putLong(1)
                .putShort((short) 0)
                .flip();
        assertThrows(ProtocolException.class, () -> WireFormat.decodePayload(1, hello));
    }

    @Test
    void randomPayloadsNeverEscapeAsAnythingButProtocolException() {
        Random r = new Random(42);
        for (int i = 0; i < 20000; i++) {
            int type = 1 + r.nextInt(11);
            byte[] bytes = new byte[r.nextInt(80)];
            r.nextBytes(bytes);
            try {
                WireFormat.decodePayload(type, ByteBuffer.wrap(bytes));
            } catch (ProtocolException expected) {
                // the only acceptable failure
            }
        }
    }

    @Test
    void anErrorOfAnyVersionCanBeRead() {
        ByteBuffer b = WireFormat.encode(new Message.Error(Message.ErrorCode.VERSION_MISMATCH, "upgrade"));
        WireFormat.Header h = WireFormat.decodeHeader(b);
        assertEquals(
                "upgrade", WireFormat.decodeAnyVersionError(h.type(), b.slice()).message());
        assertNull(WireFormat.decodeAnyVersionError(3, ByteBuffer.allocate(0)));
    }
}
