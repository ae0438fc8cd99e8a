package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdxTest {
    private static final Path FASHION = Path.of("/usr/share/datasets/fashion-mnist");

    @TempDir
    Path dir;

    /** Writes an unsigned-byte IDX file with {@code dims}, gzipped if {@code gz}. */
    static void writeIdx(Path file, byte[] data, boolean gz, int... dims) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0x0800 | dims.length);
        for (int d : dims) {
            out.writeInt(d);
        }
        out.write(data);
        try (OutputStream f = gz ? new GZIPOutputStream(Files.newOutputStream(file)) : Files.newOutputStream(file)) {
            f.write(bytes.toByteArray());
        }
    }

    /** Image i has every pixel equal to 10 * i + (pixel index); label i is i % 10. */
    private Path smallSet(boolean gz, int n) throws IOException {
        byte[] px = new byte[n * 3 * 2];
        byte[] labels = new byte[n];
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < 6; p++) {
                px[i * 6 + p] = (byte) (10 * i + p);
            }
            labels[i] = (byte) (i % 10);
        }
        String suffix = gz ? ".gz" : "";
        writeIdx(dir.resolve("train-images-idx3-ubyte" + suffix), px, gz, n, 3, 2);
        writeIdx(dir.resolve("train-labels-idx1-ubyte" + suffix), labels, gz, n);
        return dir;
    }

    @Test
    void readsPlainAndGzippedFilesAlike() throws IOException {
        byte[] data = {1, 2, 3, 4, 5, 6};
        writeIdx(dir.resolve("a"), data, false, 2, 3);
        writeIdx(dir.resolve("a.gz"), data, true, 2, 3);
        IdxFile plain = IdxFile.read(dir.resolve("a"));
        assertEquals(plain, IdxFile.read(dir.resolve("a.gz")));
        assertArrayEquals(new int[] {2, 3}, plain.dims());
        assertEquals(2, plain.count());
        assertEquals(3, plain.sampleSize());
        assertArrayEquals(data, plain.data());
    }

    @Test
    void badFilesAreExplained() throws IOException {
        Files.writeString(dir.resolve("text"), "hello world");
        IOException e = assertThrows(IOException.class, () -> IdxFile.read(dir.resolve("text")));
        assertTrue(e.getMessage().contains("not an IDX file"), e.getMessage());
        Path floats = dir.resolve("floats");
        Files.write(floats, new byte[] {0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0});
        e = assertThrows(IOException.class, () -> IdxFile.read(floats));
        assertTrue(e.getMessage().contains("only unsigned bytes"), e.getMessage());
        writeIdx(dir.resolve("short"), new byte[] {1, 2}, false, 4);
        e = assertThrows(IOException.class, () -> IdxFile.read(dir.resolve("short")));
        assertTrue(e.getMessage().contains("ends early"), e.getMessage());
        writeIdx(dir.resolve("train-images-idx3-ubyte"), new byte[12], false, 2, 2, 3);
        writeIdx(dir.resolve("train-labels-idx1-ubyte"), new byte[3], false, 3);
        e = assertThrows(IOException.class, () -> IdxDataset.open(dir, "train"));
        assertTrue(e.getMessage().contains("same split"), e.getMessage());
        e = assertThrows(IOException.class, () -> IdxDataset.open(dir, "test"));
        assertTrue(e.getMessage().contains("dataset-fashion-mnist"), e.getMessage());
    }

    @Test
    void sourceWritesUint8ImagesAndLabelsInSamplerOrder() throws Exception {
        IdxDataset data = IdxDataset.open(smallSet(true, 7), "train");
        try (IdxSource s = IdxSource.builder(data).uint8().batchSize(3).seed(4).build()) {
            assertEquals("image:uint8[3, 2]", s.layout().tensors().get(0).describe());
            CollectingSink sink = new CollectingSink(s.layout(), 2);
            s.emitEpoch(1, sink);
            assertEquals(3, sink.received().size());
            int[] order = s.sampler().order(1);
            byte[] images = sink.concatenated(0);
            byte[] labels = sink.concatenated(1);
            for (int k = 0; k < 7; k++) {
                for (int p = 0; p < 6; p++) {
                    assertEquals((byte) (10 * order[k] + p), images[k * 6 + p]);
                }
                assertEquals(
                        order[k] % 10, MemorySegment.ofArray(labels).getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, k));
            }
        }
    }

    @Test
    void sourceWritesNormalizedFloatsWithAChannelDimension() throws Exception {
        IdxDataset data = IdxDataset.open(smallSet(false, 4), "train");
        try (IdxSource s = IdxSource.builder(data)
                .floats(0.5f, 0.25f)
                .batchSize(4)
                .shuffle(false)
                .dropLast(true)
                .build()) {
            assertEquals("image:float32[1, 3, 2]", s.layout().tensors().get(0).describe());
            CollectingSink sink = new CollectingSink(s.layout(), 2);
            s.emitEpoch(0, sink);
            CollectingSink.Received r = sink.received().getFirst();
            for (int k = 0; k < 4; k++) {
                for (int p = 0; p < 6; p++) {
                    float expected = ((10 * k + p) / 255f - 0.5f) / 0.25f;
                    assertEquals(expected, r.floatAt(0, k * 6 + p), 0f);
                }
            }
        }
    }

    @Test
    void realFashionMnistLoadsAndServes() throws Exception {
        assumeTrue(
                Files.isDirectory(FASHION),
                FASHION + " is missing; install it with apt-get install dataset-fashion-mnist" + " to run this test");
        IdxDataset train = IdxDataset.open(FASHION, "train");
        IdxDataset test = IdxDataset.open(FASHION, "test");
        assertEquals(60000, train.size());
        assertEquals(10000, test.size());
        assertEquals(28, train.rows());
        assertEquals(28, train.cols());
        int[] perClass = new int[10];
        for (int i = 0; i < train.size(); i++) {
            perClass[train.label(i)]++;
        }
        assertArrayEquals(new int[] {6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000}, perClass);
        try (IdxSource s = IdxSource.builder(test)
                .floats(0.2860f, 0.3530f)
                .batchSize(1000)
                .workers(2)
                .seed(1)
                .build()) {
            CollectingSink sink = new CollectingSink(s.layout(), 2);
            s.emitEpoch(0, sink);
            assertEquals(10, sink.received().size());
            float[] all = MemorySegment.ofArray(sink.concatenated(0)).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            double mean = 0;
            for (float v : all) {
                mean += v;
            }
            mean /= all.length;
            assertEquals(0.0, mean, 0.05, "Fashion-MNIST's own mean and std normalize it to about zero mean");
        }
    }
}
