package io.tensorsocket.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.DType;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.ProducerStatus.Consumer;
import io.tensorsocket.ProducerStatus.State;
import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorSpec;
import io.tensorsocket.source.SyntheticSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The shared test vectors in docs/test-vectors: one frame per message type (those of the feeder socket
 * too), and samples of the synthetic generator. The Python client's tests read the same files, so both sides stay in step with
 * docs/PROTOCOL.md. Run with {@code -Dtensorsocket.writeVectors=true} to rewrite them after a
 * deliberate change of the format.
 */
class ProtocolVectorsTest {
    static final Map<String, Message> FRAMES = new LinkedHashMap<>();

    static {
        FRAMES.put(
                "hello",
                new Message.Hello(
                        64,
                        true,
                        4242,
                        "python3 train.py — ü",
                        StartPolicy.NEXT_EPOCH_START,
                        true,
                        "ddp-lr0.1",
                        2,
                        4,
                        true));
        FRAMES.put(
                "welcome",
                new Message.Welcome(
                        -77,
                        3,
                        999,
                        "/dev/shm/tensorsocket-u/n/arena",
                        8,
                        1 << 20,
                        64,
                        List.of(
                                TensorSpec.of("image", DType.FLOAT32, 3, 224, 224),
                                TensorSpec.of("label", DType.INT64),
                                TensorSpec.of("mask", DType.BOOL, 7)),
                        50000,
                        0,
                        StartMode.EXACT,
                        4,
                        1024,
                        "synthetic:samples=5",
                        5,
                        StartMode.EXACT));
        FRAMES.put("batch", new Message.BatchReady(1L << 40, 7, 3, 12, 768, 64));
        FRAMES.put("release", new Message.Release(42));
        FRAMES.put("epoch_end", new Message.EpochEnd(2, 782, 50000));
        FRAMES.put("end", new Message.EndOfStream(10));
        FRAMES.put("error", new Message.Error(Message.ErrorCode.EVICTED, "consumer 3 held batch 9 too long"));
        FRAMES.put("bye", new Message.Bye());
        FRAMES.put("status_request", new Message.StatusRequest());
        FRAMES.put("progress", new Message.Progress(3, 123456, 7_000_000_000L, 21_000_000_000L));
        FRAMES.put("heartbeat", new Message.Heartbeat());
        FRAMES.put(
                "status",
                new Message.Status(new ProducerStatus(
                        4242,
                        "cifar",
                        "synthetic:samples=5",
                        State.SERVING,
                        64,
                        50000,
                        10,
                        3,
                        1024,
                        782,
                        50048,
                        12345.5,
                        16,
                        1 << 20,
                        9,
                        2,
                        2,
                        90_000_000_000L,
                        2,
                        1,
                        StartMode.EXACT,
                        new ProducerStatus.Cache(512L << 20, 300L << 20, 500, 600, 1200, 600),
                        List.of(
                                new Consumer(
                                        1,
                                        777,
                                        "ana",
                                        32,
                                        false,
                                        StartMode.EPOCH_START,
                                        3,
                                        151024,
                                        128,
                                        4,
                                        900,
                                        true,
                                        120000,
                                        4321.25,
                                        5_000_000_000L,
                                        25_000_000_000L,
                                        30_000_000_000L,
                                        "python3 train.py",
                                        false),
                                new Consumer(
                                        2,
                                        778,
                                        "ana",
                                        100,
                                        true,
                                        StartMode.ROLLING,
                                        3,
                                        151000,
                                        152,
                                        3,
                                        600,
                                        false,
                                        0,
                                        0,
                                        0,
                                        0,
                                        1_000_000_000L,
                                        "flight 10.0.0.2:51000",
                                        true,
                                        "ddp",
                                        3,
                                        4,
                                        0.75,
                                        2,
                                        123456,
                                        160000,
                                        true)),
                        7L)));
        FRAMES.put(
                "feeder_hello",
                new Message.FeederHello(
                        4243,
                        "python3 feed.py",
                        64,
                        60000,
                        0,
                        "mnist via DataLoader",
                        List.of(TensorSpec.of("image", DType.UINT8, 1, 28, 28), TensorSpec.of("label", DType.INT64)),
                        60001,
                        true,
                        -5,
                        2,
                        4L * 2 * 64 * 28 * 28));
        FRAMES.put("feeder_welcome", new Message.FeederWelcome(4244, "/dev/shm/tensorsocket-u/mnist/arena", 2));
        FRAMES.put("claim", new Message.Claim());
        FRAMES.put("slot", new Message.SlotGrant(17, 4096 + 17 * 65536L));
        FRAMES.put("publish", new Message.Publish(17, 64));
        FRAMES.put("feeder_epoch_end", new Message.FeederEpochEnd(0, 60000));
        FRAMES.put("order", new Message.EpochOrder(3, 16000, 16005, new int[] {7, 0, 60000, 2, 1 << 20}));
        FRAMES.put("order_request", new Message.OrderRequest(3));
        FRAMES.put("move", new Message.Move(2, 12, 2L << 48));
        FRAMES.put("moved", new Message.Moved(151040));
        FRAMES.put("feeder_lane", new Message.FeederLaneHello(4243));
        FRAMES.put("lane_start", new Message.LaneStart(2, "/dev/shm/tensorsocket-u/mnist/lane-2"));
        FRAMES.put("lane_stop", new Message.LaneStop(2));
        FRAMES.put("paused", new Message.Paused());
        FRAMES.put(
                "resume",
                new Message.Resume(2300, 416, -4214222208109204676L, 1000, 1000, true, new long[] {2, 0, 3, 1, 300}));
    }

    static final String SYNTHETIC_SPEC = "samples=50,shape=3x5,dtype=%s,seed=-7,classes=7";
    static final String ORDER_SPEC = "samples=1000,seed=12345";

    static Path vectors() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs/test-vectors"))) {
                return p.resolve("docs/test-vectors");
            }
        }
        throw new AssertionError(
                "docs/test-vectors not found above " + Path.of("").toAbsolutePath());
    }

    static boolean writing() {
        return Boolean.getBoolean("tensorsocket.writeVectors");
    }

    static byte[] frame(Message m) {
        ByteBuffer b = WireFormat.encode(m);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    static String hexFile(String name, byte[] frame) {
        HexFormat hex = HexFormat.ofDelimiter(" ");
        StringBuilder s = new StringBuilder("# ")
                .append(name)
                .append(": ")
                .append(FRAMES.get(name))
                .append('\n');
        s.append("# header: magic, version, type, reserved, payload bytes\n");
        s.append(hex.formatHex(frame, 0, 4))
                .append("  ")
                .append(hex.formatHex(frame, 4, 6))
                .append("  ")
                .append(hex.formatHex(frame, 6, 7))
                .append("  ")
                .append(hex.formatHex(frame, 7, 8))
                .append("  ")
                .append(hex.formatHex(frame, 8, 12))
                .append('\n');
        if (frame.length > 12) {
            s.append("# payload\n");
        }
        for (int i = 12; i < frame.length; i += 16) {
            s.append(hex.formatHex(frame, i, Math.min(frame.length, i + 16))).append('\n');
        }
        return s.toString();
    }

    static byte[] readHex(Path file) throws IOException {
        StringBuilder digits = new StringBuilder();
        for (String line : Files.readAllLines(file)) {
            if (!line.startsWith("#")) {
                digits.append(line.replaceAll("\\s", ""));
            }
        }
        return HexFormat.of().parseHex(digits);
    }

    @Test
    void everyMessageTypeEncodesToItsCommittedVectorAndDecodesFromIt() throws IOException {
        // every message type: the consumer's (1..12), the feeder socket's (14..21), the lanes' (22, 23), the
        // feeder's lane connections' (24..26), a resumed consumer's (27) and a paused feeder's (28)
        assertEquals(
                WireFormat.LAST_TYPE + WireFormat.PAUSED - WireFormat.FEEDER_HELLO + 1,
                FRAMES.size(),
                "one vector per message type");
        for (Map.Entry<String, Message> e : FRAMES.entrySet()) {
            Path file = vectors().resolve(e.getKey() + ".hex");
            byte[] encoded = frame(e.getValue());
            if (writing()) {
                Files.writeString(file, hexFile(e.getKey(), encoded));
            }
            byte[] committed = readHex(file);
            assertArrayEquals(committed, encoded, e.getKey() + ": encoding differs from " + file);
            ByteBuffer b = ByteBuffer.wrap(committed);
            WireFormat.Header h = WireFormat.decodeHeader(b);
            assertEquals(b.remaining(), h.payloadBytes());
            Message back = WireFormat.decodePayload(h.type(), b.slice());
            if (back instanceof Message.Welcome w) {
                Message.Welcome x = (Message.Welcome) e.getValue();
                assertEquals(x.tensors(), w.tensors());
                assertEquals(x.arenaPath(), w.arenaPath());
                assertEquals(x.startMode(), w.startMode());
                assertArrayEquals(frame(x), frame(w));
            } else {
                assertEquals(e.getValue(), back, e.getKey());
            }
        }
    }

    @Test
    void theGeneratorMatchesItsCommittedSamples() throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("# fill <dtype> <sample id> <sample bytes, hex> <label>  for spec " + SYNTHETIC_SPEC);
        for (DType t : DType.values()) {
            SyntheticSpec spec = SyntheticSpec.parse(String.format(SYNTHETIC_SPEC, t.lowerName()));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment m = arena.allocate(spec.sampleBytes());
                for (long id : new long[] {0, 1, 49}) {
                    spec.fill(id, m);
                    lines.add("fill " + t.lowerName() + " " + id + " "
                            + HexFormat.of().formatHex(m.toArray(ValueLayout.JAVA_BYTE)) + " " + spec.label(id));
                }
            }
        }
        lines.add("# order <epoch> <first 20 sample ids of the epoch>  for spec " + ORDER_SPEC);
        SyntheticSpec order = SyntheticSpec.parse(ORDER_SPEC);
        for (long epoch : new long[] {0, 1, 7}) {
            int[] ids = Arrays.copyOf(order.order(epoch), 20);
            StringBuilder s = new StringBuilder("order " + epoch + " ");
            for (int i = 0; i < ids.length; i++) {
                s.append(i == 0 ? "" : ",").append(ids[i]);
            }
            lines.add(s.toString());
        }
        Path file = vectors().resolve("synthetic.txt");
        String text = String.join("\n", lines) + "\n";
        if (writing()) {
            Files.writeString(file, text);
        }
        assertTrue(Files.exists(file), file.toString());
        assertEquals(Files.readString(file, StandardCharsets.UTF_8), text);
    }
}
