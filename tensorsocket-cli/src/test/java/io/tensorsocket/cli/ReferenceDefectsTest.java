package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * One regression test per known defect of the reference implementation (TensorSocket 0.0.4, Python),
 * each named and described at its test: each would fail if that defect were present here. Where another test already
 * covers the scenario in depth, it is named. The checks that count this JVM's own descriptors (the fifteenth's IP
 * sockets, the fourteenth's concurrent shutdown) are {@link ReferenceDefect15Test}'s: they must run alone, and these
 * need not.
 */
class ReferenceDefectsTest extends ProcessTestBase {

    private static final String SPEC = "samples=105,shape=3x2,dtype=float32,seed=5";

    private TensorProducer.Builder producer(String name, String spec, int batch, long epochs) {
        return producer(base, name, spec, batch, epochs);
    }

    static TensorProducer.Builder producer(Path base, String name, String spec, int batch, long epochs) {
        return TensorProducer.builder()
                .directory(base.resolve(name))
                .source(new SyntheticSource(SyntheticSpec.parse(spec), batch))
                .epochs(epochs);
    }

    private TensorConsumer connect(String name, int batch) {
        return TensorConsumer.connect(base.resolve(name), ConsumerOptions.batchSize(batch));
    }

    /** Reads {@code epochs} epochs, verifying every sample; returns each epoch's counts. */
    static List<SyntheticVerifier.EpochCounts> readEpochs(TensorConsumer c, String spec, int epochs) {
        List<SyntheticVerifier.EpochCounts> out = new ArrayList<>();
        try (SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    v.accept(b, c.streamPosition(b));
                }
                out.add(v.finishEpoch());
            }
        }
        return out;
    }

    static void assertExact(List<SyntheticVerifier.EpochCounts> epochs, long samples) {
        for (SyntheticVerifier.EpochCounts e : epochs) {
            assertTrue(e.exact(samples), e.toString());
        }
    }

    @Test // 1: a consumer's epoch never ends; iteration runs on across epochs and the epoch counter never moves
    void defect01_iterationEndsAtTheEndOfAnEpochAndTheEpochCounterMoves() {
        try (TensorProducer p = producer("d1", SPEC, 10, 3).build();
                TensorConsumer c = connect("d1", 10)) {
            p.start();
            for (int e = 0; e < 3; e++) {
                long samples = 0;
                for (Batch b : c) {
                    assertEquals(e, c.epoch(), "the consumer's epoch counter");
                    assertEquals(e, b.epoch(), "a batch of another epoch inside epoch " + e);
                    samples += b.size();
                }
                assertEquals(105, samples, "the loop ended after exactly one epoch");
            }
            assertTrue(c.isEndOfStream(), "after the last epoch there is nothing more");
            ProducerGoneException e = assertThrows(ProducerGoneException.class, c::iterator, "and no empty epoch");
            assertTrue(e.getMessage().contains("got 3 epochs"), e.getMessage());
        }
    }

    @Test // 2: len(consumer) is inverted (dataset batches x consumer batch size / loader batch size)
    void defect02_sizeIsTheNumberOfBatchesAtTheConsumersBatchSize() {
        try (TensorProducer p = producer("d2", SPEC, 10, 1).build();
                TensorConsumer small = connect("d2", 7);
                TensorConsumer large = connect("d2", 30);
                TensorConsumer dropping = TensorConsumer.connect(
                        base.resolve("d2"), ConsumerOptions.batchSize(30).withDropLast(true))) {
            p.start();
            assertEquals(15, small.size()); // ceil(105 / 7); the inverted formula gives 11 * 7 / 10 = 7
            assertEquals(4, large.size()); // ceil(105 / 30); inverted: 11 * 30 / 10 = 33
            assertEquals(3, dropping.size());
            for (TensorConsumer c : List.of(small, large, dropping)) {
                long n = 0;
                for (Batch ignored : c) {
                    n++;
                }
                assertEquals(c.size(), n, "size() is what iteration yields at batch size " + c.batchSize());
            }
        }
    }

    @Test // 3: a race on the "last batch seen" counter accepts or rejects next-epoch batches wrongly
    void defect03_nextEpochBatchesArrivingEarlyAreNeitherMixedInNorLost() throws Exception {
        // The producer runs ahead (64 slots) while the consumer dawdles at every epoch's end, so the
        // receiver thread holds next-epoch descriptors while the iterating thread finishes the epoch.
        String spec = "samples=203,shape=4,dtype=float32,seed=3";
        try (TensorProducer p = producer("d3", spec, 8, 4).build();
                TensorConsumer c = connect("d3", 5)) {
            p.start();
            try (SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
                for (int e = 0; e < 4; e++) {
                    Iterator<Batch> it = c.iterator();
                    while (it.hasNext()) {
                        Batch b = it.next();
                        assertEquals(e, b.epoch());
                        v.accept(b, c.streamPosition(b));
                        if (b.sampleStart() + b.size() >= 195) {
                            Thread.sleep(50);
                        }
                    }
                    assertTrue(v.finishEpoch().exact(203));
                }
            }
        }
    }

    @Test // 4: a rubber band smaller than the collation window means nothing is ever sent
    void defect04_aRubberBandOfZeroStillServesEveryBatch() {
        try (TensorProducer p = producer("d4", SPEC, 10, 2).rubberBand(0).build();
                TensorConsumer c = connect("d4", 4)) {
            p.start();
            assertExact(readEpochs(c, SPEC, 2), 105);
        }
    }

    @Test // 5: a consumer batch larger than the producer's window is never served; the producer livelocks
    void defect05_aConsumerBatchManyTimesTheLoadersIsServed() {
        try (TensorProducer p = producer("d5", SPEC, 10, 2).slots(8).build();
                TensorConsumer c = connect("d5", 51)) {
            p.start();
            assertExact(readEpochs(c, SPEC, 2), 105); // (8 - 2 - 1) * 10 + 1 = 51, the largest allowed
        }
    }

    @Test // 6: a consumer batch size that does not divide the loader's silently skips samples
    void defect06_aNonDividingBatchSizeSkipsNothing() {
        try (TensorProducer p = producer("d6", SPEC, 10, 2).build();
                TensorConsumer c = connect("d6", 7);
                TensorConsumer d = connect("d6", 13)) {
            p.start();
            assertExact(readEpochs(c, SPEC, 2), 105);
            assertExact(readEpochs(d, SPEC, 2), 105);
        }
    }

    @Test // 7: the tail of every epoch (a remainder of loader batches) is loaded but never sent
    void defect07_theTailOfEveryEpochIsSent() {
        try (TensorProducer p = producer("d7", SPEC, 10, 2).build();
                TensorConsumer c = connect("d7", 10)) {
            p.start();
            for (int e = 0; e < 2; e++) {
                Batch last = null;
                int n = 0;
                for (Batch b : c) {
                    last = b;
                    n++;
                }
                assertEquals(11, n);
                assertEquals(5, last.size(), "the short tail of 5 samples arrives");
                assertEquals(100, last.sampleStart());
            }
        }
    }

    @Test // 8: a smaller last batch crashes the buffer pool on a shape mismatch
    void defect08_shortLastBatchesInEverySlotDoNotBreakTheArena() {
        // 5 slots, 11 batches per epoch: the short batch lands in a different slot each epoch; consumers
        // take views of it, gather across it and read it as a batch of its own.
        try (TensorProducer p =
                        producer("d8", SPEC, 10, 5).slots(5).rubberBand(1).build();
                TensorConsumer view = connect("d8", 5);
                TensorConsumer gather = connect("d8", 8)) {
            p.start();
            ExecutorService pool = Executors.newFixedThreadPool(2);
            Future<List<SyntheticVerifier.EpochCounts>> a = pool.submit(() -> readEpochs(view, SPEC, 5));
            Future<List<SyntheticVerifier.EpochCounts>> b = pool.submit(() -> readEpochs(gather, SPEC, 5));
            assertExact(a.get(30, TimeUnit.SECONDS), 105);
            assertExact(b.get(30, TimeUnit.SECONDS), 105);
            pool.shutdown();
        } catch (Exception e) {
            fail(e);
        }
    }

    @Test // 9: a pool slot is overwritten while a consumer still holds or reads that batch
    void defect09_aHeldBatchIsNeverOverwritten() throws Exception {
        String spec = "samples=1000,shape=16,dtype=float32,seed=9";
        try (TensorProducer p = producer("d9", spec, 10, 1)
                        .slots(5)
                        .rubberBand(0)
                        .stallTimeout(Duration.ofSeconds(30))
                        .build();
                TensorConsumer holder = connect("d9", 10);
                TensorConsumer runner = connect("d9", 10)) {
            p.start();
            Iterator<Batch> holding = holder.iterator();
            Batch held = holding.next();
            float[] before = held.tensor("data").toFloatArray();
            AtomicInteger ran = new AtomicInteger();
            Thread t = Thread.ofPlatform().daemon().start(() -> {
                for (Batch ignored : runner) {
                    ran.incrementAndGet();
                }
            });
            Thread.sleep(1000);
            assertTrue(ran.get() <= 5, "the runner got " + ran.get() + " batches: the ring wrapped under a held batch");
            assertArrayEquals(before, held.tensor("data").toFloatArray(), "the held batch changed under its reader");
            try (SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
                v.accept(held, holder.streamPosition(held));
                assertTrue(v.finishEpoch().intact());
            }
            held.close(); // let everyone go on
            while (holding.hasNext()) {
                holding.next(); // the rest of its epoch
            }
            t.join(20000);
            assertEquals(100, ran.get());
        }
    }

    @Test // 10: every consumer decodes every other consumer's messages: cost grows with K x messages
    void defect10_aConsumerReceivesOnlyItsOwnMessagesWhateverTheNumberOfOthers() throws Exception {
        try (TensorProducer p = producer("d10", SPEC, 10, 1).minConsumers(5).build()) {
            List<TensorConsumer> others = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                others.add(connect("d10", 3 + i));
            }
            p.start();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            for (TensorConsumer c : others) {
                pool.submit(() -> readEpochs(c, SPEC, 1));
            }
            // A raw consumer on its own connection counts what it is sent: its welcome, one descriptor per
            // loader batch, the epoch end and the stream end; nothing about the four others.
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(base.resolve("d10").resolve("control.sock")));
                MessageChannel mc = new MessageChannel(ch);
                mc.send(new Message.Hello(10, false, ProcessHandle.current().pid(), "counter"));
                List<Message> got = new ArrayList<>();
                for (Message m; (m = mc.read()) != null; ) {
                    if (m instanceof Message.Heartbeat) {
                        mc.send(m); // liveness, sent into silences such as the start grace: not about others
                        continue;
                    }
                    got.add(m);
                    if (m instanceof Message.BatchReady r) {
                        mc.send(new Message.Release(r.seq()));
                    }
                    if (m instanceof Message.EndOfStream) {
                        break;
                    }
                }
                assertInstanceOf(Message.Welcome.class, got.getFirst());
                assertEquals(
                        11,
                        got.stream()
                                .filter(m -> m instanceof Message.BatchReady)
                                .count());
                assertEquals(1 + 11 + 1 + 1, got.size(), got.toString());
                mc.send(new Message.Bye());
            }
            pool.shutdown();
            assertTrue(pool.awaitTermination(20, TimeUnit.SECONDS));
            others.forEach(TensorConsumer::close);
        }
    }

    @Test // 11: the epoch barrier busy-waits with no sleep
    void defect11_aWaitingProducerBurnsNoCpu() throws Exception {
        // Without lanes: a stalled consumer moved to a lane of its own holds nobody back, and the producer serves the
        // other at full speed, which is not what this measures.
        Proc producer = serve("d11", SPEC, 10, 0, "--min-consumers", "2", "--stall-timeout-s", "60", "--lanes", "0");
        long pid = Long.parseLong(producer.json().getFirst().get("pid"));
        Proc one = consume("d11", 10); // one of the two it waits for
        Thread.sleep(1500);
        long idle = cpuMillis(pid, 2000);
        assertTrue(idle < 200, "waiting for a second consumer took " + idle + " ms of CPU in 2 s");
        // Now both attached, and one stalls holding batches: the producer waits for a slot.
        Proc stalled = consume("d11", 10);
        Thread.sleep(1500);
        stalled.signal("STOP");
        Thread.sleep(500);
        long blocked = cpuMillis(pid, 2000);
        stalled.signal("CONT");
        assertTrue(blocked < 200, "waiting for a stalled consumer took " + blocked + " ms of CPU in 2 s");
        assertTrue(one.isAlive());
    }

    private static long cpuMillis(long pid, long windowMs) throws Exception {
        long a = cpuTicks(pid);
        Thread.sleep(windowMs);
        return (cpuTicks(pid) - a) * 10; // USER_HZ is 100 on Linux
    }

    private static long cpuTicks(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
    }

    @Test // 12: a missed 500 ms heartbeat drops a consumer, which re-registers at 0 and ends the epoch early for all
    void defect12_aConsumerSilentForSecondsIsNeitherDroppedNorRestartedAndNobodysEpochIsCut() throws Exception {
        String spec = "samples=300,shape=4,dtype=float32,seed=12";
        try (TensorProducer p = producer("d12", spec, 10, 1).minConsumers(2).build();
                TensorConsumer slow = connect("d12", 10);
                TensorConsumer other = connect("d12", 10)) {
            p.start();
            Future<List<SyntheticVerifier.EpochCounts>> o =
                    Executors.newSingleThreadExecutor().submit(() -> readEpochs(other, spec, 1));
            try (SyntheticVerifier v = new SyntheticVerifier(SyntheticSpec.parse(spec))) {
                int n = 0;
                for (Batch b : slow) {
                    v.accept(b, slow.streamPosition(b));
                    if (n++ == 10) {
                        Thread.sleep(1500); // three times the reference's heartbeat limit, holding a batch
                    }
                }
                assertTrue(v.finishEpoch().exact(300));
            }
            assertExact(o.get(30, TimeUnit.SECONDS), 300);
            assertEquals(0, slow.startSample());
        }
    }

    @Test // 13: shared state mutated while iterated; a late ack from a dropped consumer crashes the producer; acks
    // carry no id
    void defect13_churnAndLateOrForeignAcknowledgementsDoNotDisturbTheProducer() throws Exception {
        String spec = "samples=3000,shape=4,dtype=float32,seed=13";
        try (TensorProducer p = producer("d13", spec, 10, 1)
                        .stallTimeout(Duration.ofMillis(500))
                        .build();
                TensorConsumer honest = connect("d13", 7)) {
            p.start();
            Future<List<SyntheticVerifier.EpochCounts>> h =
                    Executors.newSingleThreadExecutor().submit(() -> readEpochs(honest, spec, 1));
            // Churn: consumers join and leave from 8 threads while batches are being published.
            ExecutorService churn = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                int b = 1 + i;
                done.add(churn.submit(() -> {
                    go.await();
                    for (int k = 0; k < 5; k++) {
                        try (TensorConsumer c = connect("d13", b)) {
                            Iterator<Batch> it = c.iterator();
                            for (int j = 0; j < k && it.hasNext(); j++) {
                                it.next();
                            }
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            // A raw consumer that takes a batch, is evicted for sitting on it, and acknowledges afterwards.
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(base.resolve("d13").resolve("control.sock")));
                MessageChannel mc = new MessageChannel(ch);
                mc.send(new Message.Hello(10, false, 1, "late"));
                Message.BatchReady first = null;
                Message m;
                while ((m = mc.read()) != null && !(m instanceof Message.Error)) {
                    if (first == null && m instanceof Message.BatchReady r) {
                        first = r;
                    }
                }
                assertNotNull(first);
                assertInstanceOf(Message.Error.class, m, "evicted with an error");
                assertTrue(((Message.Error) m).message().contains("stall timeout"), m.toString());
                mc.sendQuietly(new Message.Release(first.seq())); // late: after the eviction
            }
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
            churn.shutdown();
            assertExact(h.get(30, TimeUnit.SECONDS), 3000);
            honest.close();
            assertTrue(p.await(Duration.ofSeconds(20)), "the producer finished normally");
        }
        // Acknowledgements name the batch: releasing one never held is refused (see BadInputProcessTest).
    }

    @Test // 14: a dead producer leaves consumers blocked forever (shutdown's half: ReferenceDefect15Test)
    void defect14_deadProducerThrowsPromptly() throws Exception {
        Proc producer = serve("d14", "samples=100000,shape=4,dtype=float32,seed=1", 10, 0);
        try (TensorConsumer c = connect("d14", 10)) {
            Iterator<Batch> it = c.iterator();
            it.next();
            producer.kill();
            long t = System.nanoTime();
            ProducerGoneException e = assertThrows(ProducerGoneException.class, () -> {
                while (true) {
                    it.next();
                }
            });
            assertTrue(System.nanoTime() - t < 1_000_000_000L, "within a second");
            assertTrue(e.getMessage().contains("lost the connection to producer"), e.getMessage());
        }
    }
}
