package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.arena.ArenaLayout;
import io.tensorsocket.arena.SharedArena;
import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.protocol.WireFormat;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Consumers map the arena read-only and trust nothing a producer says about it: a fake producer that
 * announces impossible geometry or points a batch descriptor outside the arena makes the consumer fail
 * with a {@link ProtocolException}, never a crash, a hang or wrong data.
 *
 * <p>Related guarantees proven elsewhere: reading a released batch throws
 * ({@code LifetimeTest.aReleasedBatchCannotBeReadThroughAnyPath}, {@code aGatheredBatchIsInvalidatedToo});
 * a source whose batch cannot fit the arena is refused at once with the sizes in the message
 * ({@code BadInputProcessTest.arenaTooSmallForOneBatchIsRefusedAtStart}, {@link #aBatchThatCannotFitIsRefusedWithTheSizes}).
 */
@Timeout(60)
class ArenaSafetyTest {
    private static final int SLOTS = 4;
    private static final int B = 10;
    private static final long SAMPLES = 100;
    private static final long SESSION = 0x5eed;

    @TempDir
    Path tmp;

    private Path dir;
    private ServerSocketChannel server;
    private SharedArena arena;
    private ArenaLayout layout;
    private Thread fake;
    private final AtomicReference<Throwable> fakeFailure = new AtomicReference<>();

    private static final List<TensorSpec> TENSORS = List.of(TensorSpec.of("data", DType.FLOAT32, 4));

    @BeforeEach
    void fakeProducerFiles() throws IOException {
        dir = tmp.resolve("fake");
        Files.createDirectory(dir);
        layout = ArenaLayout.of(new BatchLayout(TENSORS, B), SLOTS);
        arena = SharedArena.create(dir.resolve(ProducerDirectory.ARENA_FILE), layout, SESSION, 1);
        for (int s = 0; s < SLOTS; s++) {
            arena.region(s, 0).fill((byte) (s + 1));
        }
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve(ProducerDirectory.SOCKET_FILE)));
    }

    @AfterEach
    void stop() throws Exception {
        server.close();
        if (fake != null) {
            fake.join(5000);
        }
        arena.close();
        assertNull(fakeFailure.get(), () -> "the fake producer itself failed: " + fakeFailure.get());
    }

    private Message.Welcome welcome() {
        return new Message.Welcome(
                SESSION,
                1,
                ProcessHandle.current().pid(),
                dir.resolve(ProducerDirectory.ARENA_FILE).toString(),
                SLOTS,
                layout.slotBytes(),
                B,
                TENSORS,
                SAMPLES,
                1,
                StartMode.EPOCH_START,
                0,
                0,
                "fake");
    }

    /** Serves one consumer: answers HELLO with {@code welcome}, then sends {@code then}, then waits for it to go. */
    private void serve(Message.Welcome welcome, Message... then) {
        fake = Thread.ofPlatform().daemon().start(() -> {
            try (MessageChannel ch = new MessageChannel(server.accept())) {
                assertInstanceOf(Message.Hello.class, ch.read());
                ch.send(welcome);
                for (Message m : then) {
                    ch.send(m);
                }
                while (ch.read() != null) {
                    // drain releases and the goodbye until the consumer closes
                }
            } catch (IOException e) {
                // the consumer hung up: expected after it rejected something
            } catch (Throwable t) {
                fakeFailure.set(t);
            }
        });
    }

    private TensorConsumer connect() {
        return TensorConsumer.connect(
                dir,
                ConsumerOptions.batchSize(B)
                        .withConnectTimeout(Duration.ofSeconds(5))
                        .withBatchTimeout(Duration.ofSeconds(5)));
    }

    /** Connects, reads until the consumer throws; returns the exception and the batches seen before it. */
    private ProtocolException consumeExpectingRejection(List<Float> seen) {
        try (TensorConsumer c = connect()) {
            return assertThrows(ProtocolException.class, () -> {
                for (Batch b : c) {
                    seen.add(b.tensor("data").getFloat(0));
                }
            });
        }
    }

    private static Message.BatchReady batch(long seq, int slot, long epoch, long start, int samples) {
        return new Message.BatchReady(seq, slot, epoch, seq, start, samples);
    }

    // ------------------------------------------------------------------------------------------ read-only mapping

    @Test
    void theConsumersMappingAndViewsAreReadOnly() throws IOException {
        try (SharedArena view = SharedArena.openReadOnly(dir.resolve(ProducerDirectory.ARENA_FILE), layout, SESSION)) {
            MemorySegment seg = view.segment();
            assertTrue(seg.isReadOnly());
            assertThrows(IllegalArgumentException.class, () -> seg.set(ValueLayout.JAVA_BYTE, 4096, (byte) 9));
            assertThrows(IllegalArgumentException.class, () -> view.slot(0).fill((byte) 9));
        }
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("real"))
                        .source(new SyntheticSource(SyntheticSpec.parse("samples=50,shape=4,dtype=float32,seed=1"), 10))
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("real"), ConsumerOptions.batchSize(10))) {
            Batch b = c.iterator().next();
            MemorySegment data = b.tensor("data").data();
            assertTrue(data.isReadOnly());
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> data.set(ValueLayout.JAVA_FLOAT, 0, 1f));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            assertTrue(p.consumerCount() == 1);
        }
    }

    // ------------------------------------------------------------------------------------------ bad descriptors

    @Test
    void aDescriptorNamingTheWrongSlotIsRejected() {
        serve(welcome(), batch(0, 0, 0, 0, B), batch(1, 3, 0, B, B));
        List<Float> seen = new ArrayList<>();
        ProtocolException e = consumeExpectingRejection(seen);
        assertTrue(e.getMessage().contains("inconsistent batch descriptor"), e.getMessage());
        assertEquals(List.of(Float.intBitsToFloat(0x01010101)), seen, "the valid batch before it was delivered intact");
    }

    @Test
    void aMoveToALaneWhoseArenaIsMissingSaysSo() {
        serve(welcome(), new Message.Move(1, 4, 1L << 40));
        try (TensorConsumer c = connect()) {
            ProducerGoneException e =
                    assertThrows(ProducerGoneException.class, () -> c.iterator().next());
            assertTrue(
                    e.getMessage().contains("moved this consumer to lane 1, whose arena could not be mapped"),
                    e.getMessage());
            assertInstanceOf(NoSuchFileException.class, e.getCause(), "the original cause");
        }
    }

    // ------------------------------------------------------------------------------------------ descriptor rings

    /** A rings file of session {@code session} in the fake producer's directory, ring 0 given to consumer 1 and holding {@code entries}. */
    private void rings(long session, Message... entries) throws IOException {
        ringsOwnedBy(1, session, entries);
    }

    private void ringsOwnedBy(int owner, long session, Message... entries) throws IOException {
        try (DescriptorRings rings =
                DescriptorRings.create(dir.resolve(ProducerDirectory.RINGS_FILE), 1, SLOTS, session)) {
            DescriptorRings.Writer w = rings.writer(0);
            w.claim(owner);
            Futex futex = new Futex();
            for (Message m : entries) {
                WireFormat.encode(m, w.frame());
                assertTrue(w.publish(futex));
            }
        }
    }

    @Test
    void ringsOfAnotherSessionAreRefused() throws IOException {
        Assumptions.assumeTrue(Futex.supported());
        rings(SESSION + 1);
        serve(welcome().forConsumer(1, 0));
        ProtocolException e = assertThrows(ProtocolException.class, this::connect);
        assertTrue(
                e.getMessage().contains("rings file") && e.getMessage().contains("another producer session"),
                e.getMessage());
    }

    @Test
    void aRingThatServesAnotherConsumerEndsThisOneAsLetGo() throws IOException {
        Assumptions.assumeTrue(Futex.supported());
        ringsOwnedBy(2, SESSION, batch(0, 0, 0, 0, B)); // the producer gave ring 0 to consumer 2, and said nothing
        serve(welcome().forConsumer(1, 0));
        try (TensorConsumer c = connect()) {
            ConsumerEvictedException e = assertThrows(
                    ConsumerEvictedException.class, () -> c.iterator().next());
            assertTrue(
                    e.getMessage().contains("let this consumer go")
                            && e.getMessage().contains("consumer 2"),
                    e.getMessage());
        }
    }

    @Test
    void aRingEntryThatOnlyTheSocketCarriesIsRejected() throws IOException {
        Assumptions.assumeTrue(Futex.supported());
        rings(SESSION, batch(0, 0, 0, 0, B), new Message.Heartbeat());
        serve(welcome().forConsumer(1, 0));
        List<Float> seen = new ArrayList<>();
        ProtocolException e = consumeExpectingRejection(seen);
        assertTrue(e.getMessage().contains("only the socket carries"), e.getMessage());
    }

    @Test
    void descriptorsInARingAreCheckedAsOnTheSocket() throws IOException {
        Assumptions.assumeTrue(Futex.supported());
        rings(SESSION, batch(0, 0, 0, 0, B), batch(1, 3, 0, B, B));
        serve(welcome().forConsumer(1, 0));
        List<Float> seen = new ArrayList<>();
        ProtocolException e = consumeExpectingRejection(seen);
        assertTrue(e.getMessage().contains("inconsistent batch descriptor"), e.getMessage());
        assertEquals(List.of(Float.intBitsToFloat(0x01010101)), seen, "the valid batch before it was delivered intact");
    }

    @Test
    void aDescriptorNamingASlotOutsideTheArenaIsRejected() {
        serve(welcome(), batch(SLOTS + 7, SLOTS + 7, 0, 0, B));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("inconsistent"));
    }

    @Test
    void aNegativeSeqCannotReachANegativeSlot() {
        // -1 % 4 == -1: the slot check alone would accept slot -1; the arena refuses it
        serve(welcome(), batch(-1, -1, 0, 0, B));
        ProtocolException e = consumeExpectingRejection(new ArrayList<>());
        assertTrue(e.getMessage().contains("slot -1") || e.getMessage().contains("inconsistent"), e.getMessage());
    }

    @Test
    void moreSamplesThanASlotHoldsAreRejected() {
        serve(welcome(), batch(0, 0, 0, 0, B + 1));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("inconsistent"));
    }

    @Test
    void anEmptyOrNegativeBatchIsRejected() {
        serve(welcome(), batch(0, 0, 0, 0, 0));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("inconsistent"));
    }

    @Test
    void samplesPastTheEpochAreRejected() {
        serve(welcome(), batch(0, 0, 0, SAMPLES - 5, B));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("inconsistent"));
    }

    @Test
    void anOutOfOrderSeqIsRejected() {
        serve(welcome(), batch(0, 0, 0, 0, B), batch(2, 2, 0, B, B));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("expected seq 1"));
    }

    @Test
    void aDescriptorThatSkipsSamplesIsRejected() {
        serve(welcome(), batch(0, 0, 0, 0, B), batch(1, 1, 0, 2 * B, B));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("inconsistent"));
    }

    @Test
    @SuppressWarnings("ModifiedButNotUsed") // the samples are read, as a trainer reads them; not compared
    void anEpochEndWithTheWrongCountIsRejected() {
        serve(welcome(), batch(0, 0, 0, 0, B), new Message.EpochEnd(0, 1, 7));
        List<Float> seen = new ArrayList<>();
        try (TensorConsumer c = connect()) {
            ProtocolException e = assertThrows(ProtocolException.class, () -> {
                for (Batch b : c) {
                    seen.add(b.tensor("data").getFloat(0));
                }
            });
            assertTrue(e.getMessage().contains("after 7 samples"), e.getMessage());
        }
    }

    @Test
    void aMessageOnlyConsumersSendIsRejected() {
        serve(welcome(), new Message.Hello(1, false, 1, "confused"));
        assertTrue(consumeExpectingRejection(new ArrayList<>()).getMessage().contains("unexpected Hello"));
    }

    // ------------------------------------------------------------------------------------------ bad announcements

    private ProtocolException connectExpectingRejection(UnaryOperator<Message.Welcome> edit) {
        serve(edit.apply(welcome()));
        return assertThrows(ProtocolException.class, this::connect);
    }

    private static Message.Welcome with(
            Message.Welcome w,
            String arenaPath,
            int slots,
            long slotBytes,
            int batch,
            List<TensorSpec> tensors,
            long session) {
        return new Message.Welcome(
                session,
                w.consumerId(),
                w.producerPid(),
                arenaPath,
                slots,
                slotBytes,
                batch,
                tensors,
                w.samplesPerEpoch(),
                w.epochs(),
                w.startMode(),
                w.startEpoch(),
                w.startSample(),
                w.source());
    }

    @Test
    void anArenaOutsideTheProducersDirectoryIsRefused() {
        ProtocolException e = connectExpectingRejection(w -> with(
                w, "/etc/passwd", w.slotCount(), w.slotBytes(), w.producerBatchSize(), w.tensors(), w.sessionId()));
        assertTrue(e.getMessage().contains("outside its directory"), e.getMessage());
    }

    @Test
    void moreSlotsThanTheFileHoldsAreRefused() {
        ProtocolException e = connectExpectingRejection(w ->
                with(w, w.arenaPath(), SLOTS * 4, w.slotBytes(), w.producerBatchSize(), w.tensors(), w.sessionId()));
        assertTrue(e.getMessage().contains("bytes but the producer announced"), e.getMessage());
    }

    @Test
    void slotsOfTheWrongSizeAreRefused() {
        ProtocolException e = connectExpectingRejection(w -> with(
                w, w.arenaPath(), w.slotCount(), w.slotBytes() / 2, w.producerBatchSize(), w.tensors(), w.sessionId()));
        assertTrue(e.getMessage().contains("-byte slots"), e.getMessage());
    }

    @Test
    void anArenaOfAnotherSessionIsRefused() {
        ProtocolException e = connectExpectingRejection(w ->
                with(w, w.arenaPath(), w.slotCount(), w.slotBytes(), w.producerBatchSize(), w.tensors(), SESSION + 1));
        assertTrue(e.getMessage().contains("another producer session"), e.getMessage());
    }

    @Test
    void geometryThatOverflowsIsAProtocolErrorNotAnArithmeticOne() {
        List<TensorSpec> huge = List.of(TensorSpec.of("data", DType.FLOAT64, 1L << 20, 1L << 20, 1L << 10));
        ProtocolException e = connectExpectingRejection(w ->
                with(w, w.arenaPath(), Integer.MAX_VALUE, Long.MAX_VALUE / 2, Integer.MAX_VALUE, huge, w.sessionId()));
        assertTrue(e.getMessage().contains("impossible arena"), e.getMessage());
    }

    @Test
    void tooManySlotsForTheAddressSpaceAreAProtocolError() {
        ProtocolException e = connectExpectingRejection(w -> with(
                w,
                w.arenaPath(),
                Integer.MAX_VALUE,
                ArenaLayout.of(new BatchLayout(TENSORS, 1 << 30), 1).slotBytes(),
                1 << 30,
                TENSORS,
                w.sessionId()));
        assertNotNull(e.getMessage());
    }

    @Test
    void duplicateTensorNamesAreAProtocolError() {
        List<TensorSpec> twice =
                List.of(TensorSpec.of("data", DType.FLOAT32, 4), TensorSpec.of("data", DType.FLOAT32, 4));
        ProtocolException e = connectExpectingRejection(
                w -> with(w, w.arenaPath(), w.slotCount(), w.slotBytes(), w.producerBatchSize(), twice, w.sessionId()));
        assertTrue(
                e.getMessage().contains("impossible arena") && e.getMessage().contains("appears twice"),
                e.getMessage());
    }

    // ------------------------------------------------------------------------------------------ sources that cannot
    // fit

    @Test
    void aBatchThatCannotFitIsRefusedWithTheSizes() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> TensorProducer.builder()
                        .directory(tmp.resolve("tiny"))
                        .arenaMiB(1)
                        .source(new SyntheticSource(
                                SyntheticSpec.parse("samples=100,shape=3x64x64,dtype=float32,seed=1"), 64))
                        .build());
        assertTrue(e.getMessage().contains("KiB") && e.getMessage().contains("give it at least"), e.getMessage());
    }

    @Test
    void iteratingAfterARejectionKeepsFailingInsteadOfReturningData() {
        serve(welcome(), batch(0, 3, 0, 0, B));
        try (TensorConsumer c = connect()) {
            Iterator<Batch> it = c.iterator();
            ProtocolException first = assertThrows(ProtocolException.class, it::next);
            long t0 = System.nanoTime();
            assertSame(first, assertThrows(ProtocolException.class, it::next), "the same violation, reported again");
            assertThrows(ProtocolException.class, () -> c.iterator().hasNext());
            assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "at once, not after the batch timeout");
        }
    }
}
