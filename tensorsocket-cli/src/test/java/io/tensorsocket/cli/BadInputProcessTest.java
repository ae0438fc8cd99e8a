package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tensorsocket.ProtocolException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.protocol.WireFormat;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Every bad input is a specific, actionable error, and the producer keeps serving everyone else. */
class BadInputProcessTest extends ProcessTestBase {

    private static void assertFailsWith(Proc p, String expected) throws InterruptedException {
        assertEquals(1, p.exitCode(Duration.ofSeconds(30)), p.stderr());
        assertTrue(p.errorLine().contains(expected), "expected '" + expected + "' in: " + p.errorLine());
    }

    @Test
    void unknownNameSaysSoAndHowToStartOne() throws Exception {
        assertFailsWith(
                consume("nobody-serves-this", 8, "--connect-timeout-s", "1"), "no producer named 'nobody-serves-this'");
    }

    @Test
    void invalidNameIsRejected() throws Exception {
        assertFailsWith(consume("../etc", 8), "invalid producer name");
    }

    @Test
    void directoryOwnedBySomeoneElseIsRefused() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to hand a directory to another user");
        Path foreign = Files.createDirectory(base.resolve("foreign"));
        UserPrincipal nobody =
                foreign.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(foreign, nobody);
        assertFailsWith(consume("foreign", 8), "belongs to user 'nobody'");
        Proc serve = start("serve", "--name", "foreign", "--synthetic", "samples=10", "--batch-size", "2");
        assertFailsWith(serve, "belongs to user 'nobody'");
    }

    @Test
    void impossibleBatchSizesAreRejectedWithTheLimit() throws Exception {
        serve("sizes", "samples=1000,shape=4,dtype=float32,seed=1", 10, 1, "--slots", "8");
        assertFailsWith(consume("sizes", 0), "batch size 0 is invalid");
        assertFailsWith(consume("sizes", -5), "batch size -5 is invalid");
        // 8 slots, 2 claims ahead: at most (8 - 2 - 1) * 10 + 1 = 51 samples
        assertFailsWith(consume("sizes", 52), "use a batch size of at most 51");
        Proc ok = consume("sizes", 51);
        assertEquals(0, ok.exitCode(Duration.ofSeconds(30)), ok.stderr());
        assertExactEpoch(ok.json().getFirst(), 1000, "epoch_start");
    }

    @Test
    void aBenchOfNoConsumersIsRefusedBeforeItMeasures() throws Exception {
        Proc bench = start(
                "bench",
                "--only",
                "fanout",
                "--fanout-consumers",
                "4,0",
                "--out",
                base.resolve("b").toString());
        // a parameter error, as picocli reports any: exit status 2
        assertEquals(2, bench.exitCode(Duration.ofSeconds(30)), bench.stderr());
        assertTrue(
                bench.errorLine().contains("--fanout-consumers: each count of consumers is 1 or more, not 0"),
                bench.stderr());
    }

    @Test
    void arenaTooSmallForOneBatchIsRefusedAtStart() throws Exception {
        Proc serve = start(
                "serve",
                "--name",
                "tiny",
                "--synthetic",
                "samples=100,shape=3x224x224",
                "--batch-size",
                "64",
                "--arena-mb",
                "64");
        assertFailsWith(serve, "give it at least");
    }

    @Test
    void garbageAndForeignVersionsOnTheSocketAreAnsweredAndDoNotDisturbOthers() throws Exception {
        // Three producer epochs for the honest consumer's two: on a loaded machine the rogue HELLO below may attach
        // before the honest JVM does, which then joins mid-epoch (exact) and needs part of a third epoch.
        serve(
                "rogue",
                "samples=6000,shape=8,dtype=float32,seed=9",
                10,
                3,
                "--min-consumers",
                "1",
                "--hello-timeout-s",
                "1");
        Proc honest = consume("rogue", 16, "--step-ms", "5", "--epochs", "2");
        Path socket = base.resolve("rogue").resolve("control.sock");

        // Random bytes: answered with BAD_FRAME (or closed) at once.
        try (SocketChannel ch = connect(socket)) {
            byte[] junk = new byte[256];
            new Random(1).nextBytes(junk);
            ch.write(ByteBuffer.wrap(junk));
            Message.Error e = readError(ch);
            assertEquals(Message.ErrorCode.BAD_FRAME, e.code());
            assertTrue(e.message().contains("not a TensorSocket frame"), e.message());
        }
        // A HELLO of protocol version 99: answered with VERSION_MISMATCH.
        try (SocketChannel ch = connect(socket)) {
            ByteBuffer hello = WireFormat.encode(new Message.Hello(8, false, 1, "future"));
            hello.putShort(4, (short) 99);
            ch.write(hello);
            Message.Error e = readError(ch);
            assertEquals(Message.ErrorCode.VERSION_MISMATCH, e.code());
            assertTrue(e.message().contains("version 99"), e.message());
        }
        // A frame header claiming a 1 GiB payload: refused without reading it.
        try (SocketChannel ch = connect(socket)) {
            ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
            b.putInt(WireFormat.MAGIC)
                    .putShort((short) WireFormat.VERSION)
                    .put((byte) 1)
                    .put((byte) 0)
                    .putInt(1 << 30)
                    .flip();
            ch.write(b);
            Message.Error e = readError(ch);
            assertTrue(e.message().contains("limit"), e.message());
        }
        // A client that connects and says nothing is dropped after the hello timeout.
        try (SocketChannel ch = connect(socket)) {
            long start = System.nanoTime();
            int n = ch.read(ByteBuffer.allocate(16));
            assertEquals(-1, n);
            assertTrue((System.nanoTime() - start) / 1e9 < 10);
        }
        // A valid HELLO followed by a release of a batch it never held: told off and dropped.
        try (SocketChannel ch = connect(socket)) {
            ch.write(WireFormat.encode(new Message.Hello(8, false, 1, "liar")));
            ch.write(WireFormat.encode(new Message.Release(123456789L)));
            Message.Error e = null;
            for (int i = 0; i < 1000 && e == null; i++) {
                Message m = read(ch);
                assertNotNull(m, "connection closed without an error");
                if (m instanceof Message.Error err) {
                    e = err;
                }
            }
            assertNotNull(e);
            assertTrue(e.message().contains("does not hold"), e.message());
        }
        assertEquals(0, honest.exitCode(Duration.ofSeconds(60)), honest.stderr());
        assertEquals(2, honest.json().size(), honest.json().toString());
        for (var e : honest.json()) {
            assertExactEpoch(e, 6000);
        }
    }

    @Test
    void hundredsOfMutatedTruncatedAndOversizedFramesLeaveHonestConsumersExact() throws Exception {
        // The decoders alone are fuzzed in WireFormatFuzzTest; this feeds the same kinds of frames to a live producer.
        Proc producer = serve(
                "fuzzed",
                "samples=4000,shape=8,dtype=float32,seed=4",
                10,
                2,
                "--min-consumers",
                "2",
                "--hello-timeout-s",
                "1");
        Proc a = consume("fuzzed", 16, "--step-ms", "2");
        Proc b = consume("fuzzed", 7, "--step-ms", "1");
        // Both honest consumers are in before any rogue HELLO could count towards --min-consumers.
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (producer.stderr().lines().filter(l -> l.contains(" joined at ")).count() < 2
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        Path socket = base.resolve("fuzzed").resolve("control.sock");
        Random random = new Random(5);
        List<Message> valid = List.of(
                new Message.Hello(8, false, 1, "rogue"),
                new Message.Release(3),
                new Message.Bye(),
                new Message.EpochEnd(0, 1, 1),
                new Message.Error(Message.ErrorCode.INTERNAL, "rogue"),
                new Message.BatchReady(0, 0, 0, 0, 0, 1),
                new Message.EndOfStream(1));
        int answered = 0;
        for (int i = 0; i < 300; i++) {
            ByteBuffer frame = WireFormat.encode(valid.get(random.nextInt(valid.size())));
            byte[] bytes = new byte[frame.remaining()];
            frame.get(bytes);
            switch (i % 4) {
                case 0 -> bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256); // mutated
                case 1 -> bytes = Arrays.copyOf(bytes, random.nextInt(bytes.length)); // truncated
                case 2 ->
                    ByteBuffer.wrap(bytes)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .putInt(
                                    8,
                                    WireFormat.MAX_PAYLOAD
                                            + 1
                                            + random.nextInt(
                                                    Integer.MAX_VALUE - WireFormat.MAX_PAYLOAD - 1)); // oversized
                default -> {
                    bytes = new byte[1 + random.nextInt(300)]; // random
                    random.nextBytes(bytes);
                }
            }
            try (SocketChannel ch = connect(socket)) {
                ch.write(ByteBuffer.wrap(bytes));
                ch.shutdownOutput();
                try {
                    for (Message m; (m = read(ch)) != null; ) {
                        if (m instanceof Message.Error) {
                            answered++;
                        }
                        if (m instanceof Message.BatchReady r) {
                            new MessageChannel(ch).sendQuietly(new Message.Release(r.seq()));
                        }
                    }
                } catch (IOException | ProtocolException e) {
                    // the producer hung up on us: fine
                }
            }
        }
        assertTrue(answered > 100, "most bad frames are answered with an error, got " + answered);
        for (Proc c : List.of(a, b)) {
            assertEquals(0, c.exitCode(Duration.ofSeconds(60)), c.stderr());
            assertEquals(2, c.json().size());
            for (var e : c.json()) {
                assertExactEpoch(e, 4000, "epoch_start");
            }
        }
    }

    private static SocketChannel connect(Path socket) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        return ch;
    }

    private static Message.Error readError(SocketChannel ch) throws IOException {
        Message m = read(ch);
        assertNotNull(m, "the producer closed the connection without saying why");
        assertTrue(m instanceof Message.Error, "expected an error, got " + m);
        return (Message.Error) m;
    }

    private static Message read(SocketChannel ch) throws IOException {
        return new MessageChannel(ch).read();
    }

    /** A usage mistake: exit code 2, the error, and one line saying where the options are; no screen of usage. */
    private static void assertUsageError(Proc p, String expected, String help) throws InterruptedException {
        assertEquals(2, p.exitCode(Duration.ofSeconds(30)), p.stderr());
        List<String> lines = p.stderr().strip().lines().toList();
        assertTrue(
                lines.getFirst().startsWith("tensorsocket: error: ")
                        && lines.getFirst().contains(expected),
                p.stderr());
        assertEquals("run 'tensorsocket " + help + " --help' for the options", lines.getLast(), p.stderr());
        assertTrue(lines.size() <= 3, "a usage error prints the error and a hint, not the usage: " + p.stderr());
    }

    @Test
    void aMissingOptionPrintsTheErrorAndWhereTheHelpIs() throws Exception {
        assertUsageError(
                start("serve", "--name", "x", "--synthetic", "samples=10"),
                "Missing required option: '--batch-size=<batchSize>'",
                "serve");
        assertUsageError(
                start("consume", "--name", "x", "--batch-size", "8", "--bogus"),
                "Unknown option: '--bogus'",
                "consume");
    }

    @Test
    void anUnknownModelIsRejectedBeforeConnectingOrLoadingPyTorch() throws Exception {
        Proc train = start("train", "--name", "nobody-serves-this", "--batch-size", "8", "--model", "resnet");
        assertUsageError(train, "expected one of [mlp, cnn]", "train");
        assertFalse(train.stderr().contains("PyTorch") || train.stderr().contains("no producer named"), train.stderr());
    }

    @Test
    void fileErrorsAreSentencesWithoutJavaClassNames() throws Exception {
        Proc idx =
                start("serve", "--name", "x", "--idx", base.resolve("missing").toString(), "--batch-size", "8");
        assertFailsWith(idx, base.resolve("missing").resolve("train-images-idx3-ubyte") + "[.gz]: ");
        Path file = Files.writeString(base.resolve("file.txt"), "x");
        Proc images = start("serve", "--name", "x", "--images", file.toString(), "--batch-size", "8");
        assertFailsWith(images, file + ": not a folder; pass a folder with one sub-folder per class");
        for (Proc p : List.of(idx, images)) {
            assertFalse(p.stderr().contains("java.") || p.stderr().contains("Exception"), p.stderr());
        }
    }

    @Test
    void anImageFolderThatIsNotOneSubFolderPerClassIsRefusedWithTheLayoutExpected() throws Exception {
        Path one = DemoImages.ensure(base.resolve("one"), 3, 1);
        Proc single = start("serve", "--name", "x", "--images", one.toString(), "--batch-size", "2");
        assertFailsWith(single, one + " has a single class sub-folder ('");
        assertTrue(
                single.errorLine()
                        .contains("--images expects one sub-folder per class, " + one + "/<class>/<image>.jpg"),
                single.errorLine());
        Path flat = base.resolve("flat");
        DemoImages.ensure(flat, 2, 1);
        try (var s = Files.walk(flat)) {
            for (Path jpg : s.filter(f -> f.toString().endsWith(".jpg")).toList()) {
                Files.move(jpg, flat.resolve(jpg.getFileName().toString()));
            }
        }
        Proc loose = start("serve", "--name", "x", "--images", flat.toString(), "--batch-size", "2");
        assertFailsWith(
                loose,
                flat + " holds 2 image(s) directly, not in class sub-folders; arrange them as " + flat
                        + "/<class>/<image>.jpg");
    }

    @Test
    void aSyntheticShapeWithADimensionBelowOneIsRefused() throws Exception {
        assertFailsWith(
                start("serve", "--name", "x", "--synthetic", "samples=10,shape=3x0", "--batch-size", "2"),
                "a shape is its dimensions, each at least 1, joined by x, such as 3x32x32, not '3x0'");
    }

    @Test
    void normalisationOptionsOutsideIdxAreRefused() throws Exception {
        assertFailsWith(
                start("serve", "--name", "x", "--synthetic", "samples=10", "--batch-size", "2", "--mean", "0.5"),
                "--mean and --std apply to --idx sources");
    }

    @Test
    void aPreloadOfAnythingButSyntheticDataOrOfMoreThanHalfTheMemoryIsRefused() throws Exception {
        Path images = Files.createDirectories(base.resolve("preload-images/cat"));
        assertFailsWith(
                start(
                        "serve",
                        "--name",
                        "x",
                        "--images",
                        images.getParent().toString(),
                        "--batch-size",
                        "2",
                        "--preload"),
                "--preload applies to --synthetic sources");
        assertFailsWith(
                start(
                        "serve",
                        "--name",
                        "x",
                        "--synthetic",
                        "samples=100000000,shape=3x224x224",
                        "--batch-size",
                        "2",
                        "--preload"),
                "--preload of 100000000 samples of 602112 bytes needs");
    }
}
