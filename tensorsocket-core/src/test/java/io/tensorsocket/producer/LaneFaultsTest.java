package io.tensorsocket.producer;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchLayout;
import io.tensorsocket.BatchSink;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.IndexedSource;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What goes wrong around a move to a lane, and what each party is told: a MOVED nobody asked for, a consumer that
 * never answers its MOVE, one that stalls its lane, a loader that fails in a lane. Raw consumers speak the protocol
 * over a real socket beside a real consumer that reads fast, so the producer has someone to move a laggard for.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LaneFaultsTest {
    private static final SyntheticSpec SPEC = SyntheticSpec.parse("samples=2000,shape=4,dtype=float32,seed=41");

    @TempDir
    Path tmp;

    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    @Test
    void aMovedNobodyAskedForIsABadFrame() throws Exception {
        Path dir = tmp.resolve("unasked");
        try (TensorProducer p = producer(dir, new SyntheticSource(SPEC, 10), 1);
                MessageChannel raw = rawConsumer(dir)) {
            p.start();
            assertInstanceOf(Message.Welcome.class, raw.read());
            raw.send(new Message.Moved(0));
            Message.Error e = errorFrom(raw);
            assertEquals(Message.ErrorCode.BAD_FRAME, e.code());
            assertEquals("you sent MOVED without a MOVE to answer", e.message());
        }
    }

    @Test
    void aConsumerThatNeverAnswersItsMoveIsEvictedSayingSo() throws Exception {
        Path dir = tmp.resolve("silent");
        try (TensorProducer p = producer(dir, new SyntheticSource(SPEC, 10), 2);
                MessageChannel raw = rawConsumer(dir)) {
            Future<?> fast = readFast(dir);
            p.start();
            Message.Error e = errorFrom(raw); // it releases nothing and leaves MOVE unanswered
            assertEquals(Message.ErrorCode.EVICTED, e.code(), e.message());
            assertTrue(e.message().contains("did not answer its move to lane 1 within 2000 ms"), e.message());
            fast.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aConsumerThatStallsItsLaneIsEvictedSayingSo() throws Exception {
        Path dir = tmp.resolve("stalls");
        try (TensorProducer p = producer(dir, new SyntheticSource(SPEC, 10), 2);
                MessageChannel raw = rawConsumer(dir)) {
            Future<?> fast = readFast(dir);
            p.start();
            for (Message m = raw.read(); !(m instanceof Message.Move); m = raw.read()) {
                assertFalse(m == null || m instanceof Message.Error, "no MOVE came, but " + m);
                answerHeartbeat(raw, m);
            }
            raw.send(new Message.Moved(0)); // it released nothing: it gives back everything, its lane starts at 0
            Message.Error e = errorFrom(raw);
            assertEquals(Message.ErrorCode.EVICTED, e.code(), e.message());
            assertTrue(e.message().matches(".*held batch \\d+ of lane 1 for more than 2000 ms.*"), e.message());
            fast.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aLoaderThatFailsInALaneFailsThatConsumerWithItsCause() throws Exception {
        Path dir = tmp.resolve("fails");
        try (TensorProducer p = producer(dir, new FailingInLanes(new SyntheticSource(SPEC, 10)), 2);
                TensorConsumer slow = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10))) {
            Future<?> fast = readFast(dir);
            p.start();
            TensorSocketException e = assertThrows(TensorSocketException.class, () -> {
                for (int epoch = 0; epoch < 3; epoch++) {
                    for (Batch b : slow) {
                        b.close();
                        Thread.sleep(15); // slow enough to be moved to a lane however loaded the machine is
                    }
                }
            });
            assertTrue(e.getMessage().contains("failed in lane 1"), e.getMessage());
            assertTrue(e.getMessage().contains("IllegalStateException: the disk went away"), e.getMessage());
            fast.get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aConsumerThatNeverAnswersItsMoveIntoARunningLaneIsEvictedAndTheLaneReadsOn() throws Exception {
        Path dir = tmp.resolve("joiner");
        try (TensorProducer p = producer(dir, new SyntheticSource(SPEC, 10), 3);
                MessageChannel raw = rawConsumer(dir);
                TensorConsumer slowest = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10))) {
            Future<?> fast = readFast(dir);
            p.start();
            // the slowest founds the one lane; the raw one, faster than it, then holds the fast one back and is moved
            // into that lane, which it never answers: the lane waits for it, then goes on without it
            Future<Integer> founder = pool.submit(() -> {
                int epochs = 0;
                for (; epochs < 3; epochs++) {
                    long samples = 0;
                    for (Batch b : slowest) {
                        samples += b.size();
                        b.close();
                        Thread.sleep(8);
                    }
                    assertEquals(SPEC.samples(), samples, "epoch " + epochs + " of the lane's founder is whole");
                }
                return epochs;
            });
            int laneOfFounderAtMove = -1;
            for (Message m = raw.read(); ; m = raw.read()) {
                assertFalse(m == null || m instanceof Message.Error, "no MOVE came, but " + m);
                answerHeartbeat(raw, m);
                if (m instanceof Message.BatchReady r) {
                    Thread.sleep(3);
                    raw.send(new Message.Release(r.seq()));
                }
                if (m instanceof Message.Move) {
                    for (ProducerStatus.Consumer c : p.status().consumers()) {
                        if (c.id() == slowest.consumerId()) {
                            laneOfFounderAtMove = c.lane();
                        }
                    }
                    break;
                }
            }
            assertEquals(1, laneOfFounderAtMove, "the raw consumer was moved into the lane the slowest founded");
            Message.Error e = errorFrom(raw);
            assertEquals(Message.ErrorCode.EVICTED, e.code(), e.message());
            assertTrue(e.message().contains("did not answer its move to lane 1 within 2000 ms"), e.message());
            assertEquals(3, founder.get(40, TimeUnit.SECONDS), "the lane's founder read on");
            fast.get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * A consumer moved after the main stream ended an epoch, whose batches it gives back (all of them, or those after
     * the epoch's end), is sent each epoch's end exactly once in all (the lane's after that epoch's last batch), and
     * its lane's batches make each epoch from its MOVED on one whole pass.
     */
    @ParameterizedTest
    @ValueSource(longs = {0, 100})
    void aConsumerMovedAfterAnEpochEndedHasEachEpochsEndOnce(long movedAt) throws Exception {
        SyntheticSpec tenBatches = SyntheticSpec.parse("samples=100,shape=4,dtype=float32,seed=42");
        Path dir = tmp.resolve("ends-" + movedAt);
        try (TensorProducer p = producer(dir, new SyntheticSource(tenBatches, 10), 2);
                MessageChannel raw = rawConsumer(dir)) {
            Future<?> fast = readFast(dir);
            p.start();
            Map<Long, Integer> ends = new HashMap<>();
            // epoch 0 (10 batches), its end, then epoch 1 until the 16 slots are full: then it holds the others back
            List<Message.BatchReady> fromMain = new ArrayList<>();
            for (Message m = raw.read(); !(m instanceof Message.Move); m = raw.read()) {
                assertFalse(m == null || m instanceof Message.Error, "no MOVE came, but " + m);
                answerHeartbeat(raw, m);
                if (m instanceof Message.BatchReady r) {
                    fromMain.add(r);
                }
                if (m instanceof Message.EpochEnd e) {
                    ends.merge(e.epoch(), 1, Integer::sum);
                }
            }
            assertEquals(Map.of(0L, 1), ends, "the main stream ended epoch 0 before the move");
            raw.send(new Message.Moved(movedAt)); // what it keeps it reads and releases; the rest it gives back
            for (Message.BatchReady r : fromMain) {
                if (r.epoch() * 100 + r.sampleStart() < movedAt) {
                    raw.send(new Message.Release(r.seq()));
                }
            }
            Map<Long, Long> samples = new HashMap<>();
            for (Message m = raw.read(); !(m instanceof Message.EndOfStream); m = raw.read()) {
                assertFalse(m == null || m instanceof Message.Error, "the lane ended with " + m);
                answerHeartbeat(raw, m);
                if (m instanceof Message.BatchReady r) {
                    assertTrue(r.epoch() == 0 || !ends.containsKey(r.epoch()), "a batch after its epoch's end: " + r);
                    samples.merge(r.epoch(), (long) r.samples(), Long::sum);
                    raw.send(new Message.Release(r.seq()));
                }
                if (m instanceof Message.EpochEnd e) {
                    ends.merge(e.epoch(), 1, Integer::sum);
                }
            }
            assertEquals(Map.of(0L, 1, 1L, 1, 2L, 1), ends, "each epoch's end once");
            Map<Long, Long> whole = new HashMap<>(Map.of(1L, 100L, 2L, 100L));
            if (movedAt == 0) {
                whole.put(0L, 100L);
            }
            assertEquals(whole, samples, "the lane's batches: each epoch from the move on once");
            fast.get(30, TimeUnit.SECONDS);
        }
    }

    private static TensorProducer producer(Path dir, IndexedSource source, int minConsumers) {
        return TensorProducer.builder()
                .directory(dir)
                .source(source)
                .slots(16)
                .epochs(3)
                .lanes(1)
                .laneIdleCores(0) // lanes' mechanics, whatever else the machine runs
                .stallTimeout(Duration.ofSeconds(2))
                .minConsumers(minConsumers)
                .startGrace(Duration.ZERO)
                .build();
    }

    /** A consumer that reads every batch at once: the one a laggard holds back. */
    private Future<?> readFast(Path dir) {
        TensorConsumer c = TensorConsumer.connect(dir, ConsumerOptions.batchSize(10));
        return pool.submit(() -> {
            try (c) {
                for (int epoch = 0; epoch < 3; epoch++) {
                    for (Batch b : c) {
                        b.close();
                    }
                }
            }
            return null;
        });
    }

    /** A consumer over a bare socket that can be moved to a lane, and releases nothing unless told to. */
    private static MessageChannel rawConsumer(Path dir) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(dir.resolve(ProducerDirectory.SOCKET_FILE)));
        MessageChannel mc = new MessageChannel(ch);
        mc.send(new Message.Hello(
                10, false, ProcessHandle.current().pid(), "raw", StartPolicy.JOIN_NOW, false, "", 0, 1, true));
        return mc;
    }

    private static void answerHeartbeat(MessageChannel raw, Message m) throws IOException {
        if (m instanceof Message.Heartbeat) {
            raw.send(m);
        }
    }

    /** Reads until the producer's ERROR, answering heartbeats. */
    private static Message.Error errorFrom(MessageChannel raw) throws IOException {
        for (Message m; (m = raw.read()) != null; ) {
            if (m instanceof Message.Error e) {
                return e;
            }
            answerHeartbeat(raw, m);
        }
        throw new AssertionError("the connection ended without an ERROR");
    }

    /** A source that loads on the main stream and throws in a lane (the thread a lane loads on). */
    private record FailingInLanes(IndexedSource inner) implements IndexedSource {
        @Override
        public BatchLayout layout() {
            return inner.layout();
        }

        @Override
        public long samplesPerEpoch() {
            return inner.samplesPerEpoch();
        }

        @Override
        public int datasetSize() {
            return inner.datasetSize();
        }

        @Override
        public boolean shuffles() {
            return inner.shuffles();
        }

        @Override
        public SplittableRandom shuffleRandom(long epoch) {
            return inner.shuffleRandom(epoch);
        }

        @Override
        public boolean loadsConcurrently() {
            return true;
        }

        @Override
        public void emitEpoch(long epoch, int[] order, BatchSink sink) throws Exception {
            if (Thread.currentThread().getName().startsWith("tensorsocket-lane-")) {
                throw new IllegalStateException("the disk went away");
            }
            inner.emitEpoch(epoch, order, sink);
        }

        @Override
        public String description() {
            return inner.description();
        }
    }
}
