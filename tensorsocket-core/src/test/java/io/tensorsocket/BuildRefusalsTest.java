package io.tensorsocket;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.directory.ProducerDirectory;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Inputs the protocol cannot carry are refused when the producer is built, with the numbers, leaving nothing. */
@Timeout(60)
class BuildRefusalsTest {
    @TempDir
    Path tmp;

    private static BatchSource synthetic() {
        return new SyntheticSource(SyntheticSpec.parse("samples=40,shape=4,dtype=float32,seed=1"), 10);
    }

    private List<Path> leftovers() throws Exception {
        try (Stream<Path> s = Files.walk(tmp)) {
            return s.filter(p -> !p.equals(tmp)).toList();
        }
    }

    @Test
    void aDescriptionLongerThanTheProtocolCarriesIsRefused() throws Exception {
        BatchSource inner = synthetic();
        String longText = "x".repeat(BatchSource.MAX_DESCRIPTION_BYTES - 1) + "é"; // 4097 UTF-8 bytes
        BatchSource wordy = new BatchSource() {
            @Override
            public BatchLayout layout() {
                return inner.layout();
            }

            @Override
            public long samplesPerEpoch() {
                return inner.samplesPerEpoch();
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) throws Exception {
                inner.emitEpoch(epoch, sink);
            }

            @Override
            public String description() {
                return longText;
            }
        };
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> TensorProducer.builder()
                        .directory(tmp.resolve("wordy"))
                        .source(wordy)
                        .build());
        assertTrue(
                e.getMessage().contains("is 4097 UTF-8 bytes, more than the 4096 the protocol carries"),
                e.getMessage());
        assertEquals(List.of(), leftovers());
    }

    @Test
    void aDescriptionAtTheLimitIsServed() throws Exception {
        // The old failure mode: the WELCOME could not be encoded and every consumer timed out. At the limit it works.
        BatchSource inner = synthetic();
        String limit = "y".repeat(BatchSource.MAX_DESCRIPTION_BYTES);
        BatchSource full = new BatchSource() {
            @Override
            public BatchLayout layout() {
                return inner.layout();
            }

            @Override
            public long samplesPerEpoch() {
                return inner.samplesPerEpoch();
            }

            @Override
            public void emitEpoch(long epoch, BatchSink sink) throws Exception {
                inner.emitEpoch(epoch, sink);
            }

            @Override
            public String description() {
                return limit;
            }
        };
        try (TensorProducer p = TensorProducer.builder()
                        .directory(tmp.resolve("full"))
                        .source(full)
                        .build()
                        .start();
                TensorConsumer c = TensorConsumer.connect(tmp.resolve("full"), ConsumerOptions.batchSize(10))) {
            assertEquals(limit, c.sourceDescription());
            assertEquals(0, c.iterator().next().index());
        }
    }

    @Test
    void aSocketPathTooLongSaysWhatToShortenForTheProducer() throws Exception {
        Path deep = tmp.resolve("d".repeat(60)).resolve("e".repeat(60));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> TensorProducer.builder()
                        .directory(deep)
                        .source(synthetic())
                        .build());
        String socket = deep.resolve(ProducerDirectory.SOCKET_FILE).toString();
        assertTrue(
                e.getMessage()
                        .startsWith("Unix domain path too long: the control socket " + socket + " is "
                                + socket.length()
                                + " bytes, and a Unix-domain socket path holds at most 107; shorten it by "
                                + (socket.length() - 107) + " bytes"),
                e.getMessage());
        assertTrue(e.getMessage().contains("--name") && e.getMessage().contains("TENSORSOCKET_BASE"), e.getMessage());
        assertEquals(List.of(), leftovers(), "nothing is created for a producer that cannot bind");
    }

    @Test
    void aSocketPathTooLongSaysWhatToShortenForTheConsumer() throws Exception {
        Path deep = Files.createDirectories(tmp.resolve("d".repeat(60)).resolve("e".repeat(60)));
        IllegalArgumentException byDir = assertThrows(
                IllegalArgumentException.class, () -> TensorConsumer.connect(deep, ConsumerOptions.batchSize(10)));
        assertTrue(
                byDir.getMessage().startsWith("Unix domain path too long: the control socket " + deep),
                byDir.getMessage());
        String before = System.getProperty("tensorsocket.base");
        System.setProperty("tensorsocket.base", tmp.resolve("b".repeat(90)).toString());
        try {
            IllegalArgumentException byName = assertThrows(
                    IllegalArgumentException.class,
                    () -> TensorConsumer.connect("cifar", ConsumerOptions.batchSize(10)));
            assertTrue(
                    byName.getMessage()
                            .contains("shorter producer name (--name) or a shorter base directory"
                                    + " (TENSORSOCKET_BASE, now " + tmp.resolve("b".repeat(90)) + ")"),
                    byName.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty("tensorsocket.base");
            } else {
                System.setProperty("tensorsocket.base", before);
            }
        }
    }
}
