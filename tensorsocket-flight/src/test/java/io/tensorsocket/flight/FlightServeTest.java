package io.tensorsocket.flight;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchReleasedException;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.StartMode;
import io.tensorsocket.StartPolicy;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import io.tensorsocket.source.SyntheticVerifier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A producer served over Flight in this JVM, read by remote consumers over real loopback sockets. */
@Timeout(120)
class FlightServeTest {
    private static final SyntheticSpec SPEC =
            SyntheticSpec.parse("synthetic:samples=300,shape=2x3x5,dtype=float32,seed=21");

    @TempDir
    Path dir;

    private TensorProducer producer(long epochs) {
        return TensorProducer.builder()
                .directory(dir.resolve("p"))
                .source(new SyntheticSource(SPEC, 32))
                .epochs(epochs)
                .build()
                .start();
    }

    private static void verifyEpochs(RemoteConsumer c, int epochs) {
        try (SyntheticVerifier v = new SyntheticVerifier(SPEC)) {
            for (int e = 0; e < epochs; e++) {
                for (Batch b : c) {
                    v.accept(b, c.streamPosition(b));
                }
                SyntheticVerifier.EpochCounts counts = v.finishEpoch();
                assertTrue(counts.exact(300), "epoch " + e + ": " + counts);
            }
        }
    }

    @Test
    void streamsExactEpochsAndReleasesBatchesLikeLocalOnes() throws Exception {
        try (TensorProducer p = producer(2);
                FlightServe f = FlightServe.builder().producer(p).build().start();
                RemoteConsumer c =
                        RemoteConsumer.connect(f.address(), ConsumerOptions.batchSize(45), RemoteOptions.defaults())) {
            assertEquals(StartMode.EPOCH_START, c.terms().startMode());
            assertEquals(7, c.terms().batchesPerEpoch());
            assertEquals(3, c.terms().tensors().size());
            assertEquals(SPEC.format() + ",order=producer", c.terms().sourceDescription());
            Batch first = c.iterator().next();
            assertEquals(45, first.size());
            assertEquals(0, first.index());
            float x = first.tensor(SyntheticSource.DATA).getFloat(0);
            assertTrue(Float.isFinite(x));
            first.close();
            assertThrows(
                    BatchReleasedException.class,
                    () -> first.tensor(SyntheticSource.DATA).getFloat(0));
            // the rest of epoch 0 is skipped by the next iterator, epoch 1 is read whole
            try (SyntheticVerifier v = new SyntheticVerifier(SPEC)) {
                long n = 0;
                for (Batch b : c) {
                    v.accept(b, c.streamPosition(b));
                    n++;
                }
                assertEquals(7, n);
                assertTrue(v.finishEpoch().exact(300));
            }
            assertTrue(!c.iterator().hasNext() && c.isEndOfStream(), "the producer served 2 epochs");
        }
    }

    @Test
    void aRemoteConsumerThatWaitsForTheNextEpochStartsThereAndGetsItWhole() throws Exception {
        SyntheticSpec spec = SyntheticSpec.parse("synthetic:samples=3200,shape=2x3x5,dtype=float32,seed=5");
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir.resolve("w"))
                        .source(new SyntheticSource(spec, 32))
                        .epochs(2)
                        .slots(6)
                        .build()
                        .start();
                FlightServe f = FlightServe.builder().producer(p).build().start();
                TensorConsumer local = TensorConsumer.connect(dir.resolve("w"), ConsumerOptions.batchSize(32))) {
            Iterator<Batch> it = local.iterator();
            for (int i = 0; i < 6; i++) {
                it.next().close(); // six slots in, epoch 0's start has left the rubber band
            }
            ConsumerOptions waits = ConsumerOptions.batchSize(45).withStartPolicy(StartPolicy.NEXT_EPOCH_START);
            try (RemoteConsumer c = RemoteConsumer.connect(f.address(), waits, RemoteOptions.defaults())) {
                assertEquals(StartMode.EPOCH_START, c.terms().startMode());
                assertEquals(1, c.terms().startEpoch());
                assertEquals(0, c.terms().startSample());
                Thread drain = Thread.ofPlatform().start(() -> {
                    it.forEachRemaining(Batch::close);
                    local.forEach(Batch::close);
                });
                try (SyntheticVerifier v = new SyntheticVerifier(spec)) {
                    for (Batch b : c) {
                        assertEquals(1, b.epoch());
                        v.accept(b, c.streamPosition(b));
                    }
                    assertTrue(v.finishEpoch().exact(3200));
                }
                drain.join(30_000);
            }
        }
    }

    @Test
    void tensorConsumerConnectReachesAGrpcNameThroughTheServiceLoader() throws Exception {
        try (TensorProducer p = producer(2);
                FlightServe f = FlightServe.builder().producer(p).build().start();
                TensorConsumer c = TensorConsumer.connect(f.address().toString(), ConsumerOptions.batchSize(64));
                SyntheticVerifier v = new SyntheticVerifier(SPEC)) {
            assertEquals(5, c.size());
            assertEquals(SPEC.format() + ",order=producer", c.sourceDescription());
            for (int e = 0; e < 2; e++) {
                for (Batch b : c) {
                    v.accept(b, c.streamPosition(b));
                }
                assertTrue(v.finishEpoch().exact(300), "epoch " + e);
            }
            assertEquals(600, c.samplesConsumed());
            assertTrue(!c.iterator().hasNext() && c.isEndOfStream(), "the producer served 2 epochs");
        }
    }

    @Test
    void theStatusActionAnswersTheProducersStatusWithTheRemotePeer() throws Exception {
        try (TensorProducer p = producer(0);
                FlightServe f =
                        FlightServe.builder().producer(p).token("t0k").build().start();
                RemoteConsumer c = RemoteConsumer.connect(
                        f.address(),
                        ConsumerOptions.batchSize(10),
                        RemoteOptions.defaults().withToken("t0k"))) {
            c.iterator().next();
            ProducerStatus s = RemoteStatus.query(
                    f.address().toString(), RemoteOptions.defaults().withToken("t0k"), Duration.ofSeconds(5));
            assertEquals(1, s.consumersAttached());
            assertTrue(s.consumers().getFirst().client().matches("flight 127\\.0\\.0\\.1:\\d+"), s.toString());
            assertThrows(
                    PermissionDeniedException.class,
                    () -> RemoteStatus.query(f.address().toString(), RemoteOptions.defaults(), Duration.ofSeconds(5)));
        }
    }

    @Test
    void theEnvironmentCarriesTokenAndTrustForLibraryConnects() throws Exception {
        Path tokenFile = Files.writeString(dir.resolve("token"), "fromfile\n");
        assertEquals(
                "direct",
                FlightConnector.fromEnvironment(
                                Map.of("TENSORSOCKET_TOKEN", "direct", "TENSORSOCKET_TOKEN_FILE", tokenFile.toString()))
                        .token());
        RemoteOptions o = FlightConnector.fromEnvironment(
                Map.of("TENSORSOCKET_TOKEN_FILE", tokenFile.toString(), "TENSORSOCKET_TRUST", "/etc/ca.pem"));
        assertEquals("fromfile", o.token());
        assertEquals(Path.of("/etc/ca.pem"), o.trustedCertificates());
        assertEquals(null, FlightConnector.fromEnvironment(Map.of()).token());
    }

    @Test
    void tlsWithACertificateAndKeyServesGrpcTls() throws Exception {
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder(
                        "openssl",
                        "req",
                        "-x509",
                        "-newkey",
                        "rsa:2048",
                        "-nodes",
                        "-days",
                        "1",
                        "-subj",
                        "/CN=localhost",
                        "-addext",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost",
                        "-keyout",
                        key.toString(),
                        "-out",
                        cert.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        assumeTrue(
                openssl.waitFor(60, TimeUnit.SECONDS) && openssl.exitValue() == 0 && Files.exists(key),
                "needs openssl to make a test certificate");
        try (TensorProducer p = producer(1);
                FlightServe f = FlightServe.builder()
                        .producer(p)
                        .token("t0k")
                        .tls(cert, key)
                        .build()
                        .start()) {
            assertEquals("grpc+tls", f.address().toString().substring(0, 8));
            RemoteOptions o = RemoteOptions.defaults().withToken("t0k").withTrustedCertificates(cert);
            try (RemoteConsumer c = RemoteConsumer.connect(f.address(), ConsumerOptions.batchSize(64), o)) {
                verifyEpochs(c, 1);
            }
            // plain gRPC against a TLS port is an error, not a hang
            RemoteAddress plain = new RemoteAddress(false, "127.0.0.1", f.port(), p.name());
            ConsumerOptions quick = ConsumerOptions.batchSize(64).withConnectTimeout(Duration.ofSeconds(5));
            assertThrows(
                    RuntimeException.class,
                    () -> RemoteConsumer.connect(plain, quick, o).close());
        }
    }

    @Test
    void aServerThatIsNotThereIsAnErrorWithinTheConnectTimeout() {
        ConsumerOptions o = ConsumerOptions.batchSize(8).withConnectTimeout(Duration.ofSeconds(2));
        long t0 = System.nanoTime();
        assertThrows(
                ProducerGoneException.class,
                () -> RemoteConsumer.connect("grpc://127.0.0.1:1/nothing", o, RemoteOptions.defaults()));
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(5).toNanos());
    }

    @Test
    void ticketsAndAddressesRoundTripAndRefuseNonsense() {
        StreamRequest r = new StreamRequest("a b&c", 17, true, 3, Duration.ofSeconds(9), StartPolicy.NEXT_EPOCH_START);
        assertEquals(r, StreamRequest.parse(r.encode()));
        assertEquals(
                StartPolicy.JOIN_NOW,
                StreamRequest.parse("v=1&name=x&batch_size=4".getBytes(UTF_8)).startPolicy());
        assertThrows(
                IllegalArgumentException.class,
                () -> StreamRequest.parse("v=1&name=x&batch_size=4&start=later".getBytes(UTF_8)));
        assertThrows(
                IllegalArgumentException.class, () -> StreamRequest.parse("v=2&name=x&batch_size=1".getBytes(UTF_8)));
        assertThrows(
                IllegalArgumentException.class, () -> StreamRequest.parse("v=1&name=x&batch_size=0".getBytes(UTF_8)));
        assertThrows(
                IllegalArgumentException.class,
                () -> StreamRequest.parse("v=1&name=x&batch_size=4&evil=1".getBytes(UTF_8)));
        assertEquals(new RemoteAddress(true, "::1", 99, "n"), RemoteAddress.parse("grpc+tls://[::1]:99/n"));
        assertEquals("grpc://h:1/n", RemoteAddress.parse("grpc://h:1/n").toString());
        assertThrows(IllegalArgumentException.class, () -> RemoteAddress.parse("http://h:1/n"));
        assertThrows(IllegalArgumentException.class, () -> RemoteAddress.parse("grpc://h/n"));
        assertThrows(IllegalArgumentException.class, () -> RemoteAddress.parse("grpc://h:1/"));
    }

    @Test
    void threadConfinedRemoteBatchesAreWholeInTheirThreadInvalidatedOnReleaseAndRefusedToOthers() throws Exception {
        try (TensorProducer p = producer(2);
                FlightServe f = FlightServe.builder().producer(p).build().start();
                RemoteConsumer c = RemoteConsumer.connect(
                        f.address(),
                        ConsumerOptions.batchSize(45).withThreadConfinedBatches(true),
                        RemoteOptions.defaults());
                SyntheticVerifier v = new SyntheticVerifier(SPEC)) {
            Batch kept = null;
            MemorySegment keptRaw = null;
            for (Batch b : c) {
                v.accept(b, c.streamPosition(b));
                if (kept == null) {
                    kept = b;
                    keptRaw = b.tensor(SyntheticSource.DATA).data();
                    Batch mine = b;
                    var other = new AtomicReference<Throwable>();
                    Thread t = Thread.ofPlatform().start(() -> {
                        try {
                            mine.tensor(SyntheticSource.DATA).data().get(ValueLayout.JAVA_FLOAT, 0);
                        } catch (Throwable e) {
                            other.set(e);
                        }
                    });
                    t.join();
                    assertInstanceOf(
                            WrongThreadException.class, other.get(), "another thread may not read a confined batch");
                }
            }
            assertTrue(v.finishEpoch().exact(300));
            Batch first = kept;
            assertThrows(BatchReleasedException.class, () -> first.tensor(SyntheticSource.DATA));
            var raw = keptRaw;
            assertThrows(
                    IllegalStateException.class,
                    () -> raw.get(ValueLayout.JAVA_FLOAT, 0),
                    "its raw view was closed when it was released");
        }
    }

    @Test
    void aThreadConfinedRemoteBatchReleasedByAnotherThreadKeepsItsMemoryReadableByItsOwnThread() throws Exception {
        try (TensorProducer p = producer(2);
                FlightServe f = FlightServe.builder().producer(p).build().start()) {
            RemoteConsumer c = RemoteConsumer.connect(
                    f.address(),
                    ConsumerOptions.batchSize(45).withThreadConfinedBatches(true),
                    RemoteOptions.defaults());
            Iterator<Batch> it = c.iterator();
            Batch b = it.next();
            var raw = b.tensor(SyntheticSource.DATA).data();
            float before = raw.get(ValueLayout.JAVA_FLOAT, 0);
            Thread t = Thread.ofPlatform().start(b::close); // against the option's rule, from another thread
            t.join();
            assertTrue(b.isReleased());
            assertThrows(BatchReleasedException.class, () -> b.tensor(SyntheticSource.DATA));
            // the consumer reads on (its buffers recycled) and closes, from another thread too
            assertEquals(1, it.next().index());
            Thread closer = Thread.ofPlatform().start(c::close);
            closer.join();
            // the view's scope could not be closed from there, so its memory was not freed: reading it does not
            // crash the JVM (the bytes may be a later batch's)
            float after = raw.get(ValueLayout.JAVA_FLOAT, 0);
            assertTrue(Float.isFinite(before) && Float.isFinite(after), before + ", " + after);
        }
    }

    /**
     * A batch that fits the server's send queue leaves in few writes: at Netty's default high water mark (64 KiB)
     * gRPC handed the socket a 0.8 MB batch 64 KiB at a time, each write after the last had drained: 23 write
     * system calls a batch in this JVM, which serves and reads; 3 with the send queue of {@link
     * FlightServe#SEND_QUEUE}. Counted by the kernel for this process ({@code syscw} of /proc/self/io: every write
     * and writev, the event loops' wake-ups too).
     */
    @Test
    void aSmallBatchLeavesInAFewWritesNotOnePer64KiB() throws Exception {
        Path io = Path.of("/proc/self/io");
        assumeTrue(Files.isReadable(io), "needs /proc/self/io (Linux)");
        SyntheticSpec spec = SyntheticSpec.parse("synthetic:samples=640,shape=3x32x32,dtype=float32,seed=3");
        int warm = 30;
        int measured = 300;
        try (TensorProducer p = TensorProducer.builder()
                        .directory(dir.resolve("s"))
                        .source(new SyntheticSource(spec, 64))
                        .epochs((warm + measured) / 10 + 1)
                        .build()
                        .start();
                FlightServe f = FlightServe.builder().producer(p).build().start();
                RemoteConsumer c =
                        RemoteConsumer.connect(f.address(), ConsumerOptions.batchSize(64), RemoteOptions.defaults())) {
            long before = 0;
            int n = 0;
            while (n < warm + measured && !c.isEndOfStream()) {
                for (Batch unused : c) {
                    if (++n == warm) {
                        before = writeCalls(io);
                    }
                    if (n == warm + measured) {
                        break;
                    }
                }
            }
            assertEquals(warm + measured, n, "batches read");
            double perBatch = (writeCalls(io) - before) / (double) measured;
            assertTrue(perBatch < 6, "write system calls per 0.8 MB batch: " + perBatch);
        }
    }

    private static long writeCalls(Path io) throws IOException {
        return Files.readAllLines(io).stream()
                .filter(l -> l.startsWith("syscw:"))
                .mapToLong(l -> Long.parseLong(l.substring(6).trim()))
                .findFirst()
                .orElseThrow();
    }
}
