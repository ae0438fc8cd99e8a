package io.tensorsocket.bench.jmh;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.WireFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/** Encoding and decoding control frames: the per-batch BATCH/RELEASE pair and a status snapshot of 16 consumers. */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ProtocolBenchmarks {
    private final ByteBuffer buffer = ByteBuffer.allocate(WireFormat.HEADER_BYTES + WireFormat.MAX_PAYLOAD)
            .order(ByteOrder.LITTLE_ENDIAN);
    private final Message.BatchReady batch = new Message.BatchReady(123_456, 3, 2, 781, 49_984, 64);
    private Message.Status status;
    private ByteBuffer encodedBatch;
    private ByteBuffer encodedStatus;

    @Setup
    public void setUp() {
        List<ProducerStatus.Consumer> cs = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            cs.add(new ProducerStatus.Consumer(
                    i,
                    1000 + i,
                    "alice",
                    64,
                    false,
                    StartMode.EPOCH_START,
                    3,
                    150_000,
                    512,
                    2,
                    2000,
                    true,
                    140_000,
                    900.5,
                    1_000_000_000L,
                    9_000_000_000L,
                    60_000_000_000L,
                    "flight 10.0.0.7:51234"));
        }
        status = new Message.Status(new ProducerStatus(
                1,
                "imagenet",
                "image-folder root=/data",
                ProducerStatus.State.SERVING,
                64,
                50_000,
                0,
                3,
                1000,
                2400,
                151_000,
                950.0,
                12,
                38L << 20,
                6,
                2,
                2,
                60_000_000_000L,
                16,
                0,
                StartMode.EXACT,
                ProducerStatus.Cache.NONE,
                cs,
                null));
        encodedBatch = WireFormat.encode(batch);
        encodedStatus = WireFormat.encode(status);
    }

    @Benchmark
    public ByteBuffer encodeBatch() {
        buffer.clear();
        WireFormat.encode(batch, buffer);
        return buffer;
    }

    @Benchmark
    public Message decodeBatch() {
        ByteBuffer b = encodedBatch.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        WireFormat.Header h = WireFormat.decodeHeader(b);
        return WireFormat.decodePayload(h.type(), b.slice());
    }

    @Benchmark
    public ByteBuffer encodeStatus() {
        buffer.clear();
        WireFormat.encode(status, buffer);
        return buffer;
    }

    @Benchmark
    public Message decodeStatus() {
        ByteBuffer b = encodedStatus.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        WireFormat.Header h = WireFormat.decodeHeader(b);
        return WireFormat.decodePayload(h.type(), b.slice());
    }
}
