package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NormalizationTest {

    @Test
    void anIdxSourceAnnouncesTheNormalisationItApplies(@TempDir Path tmp) throws Exception {
        IdxTest.writeIdx(tmp.resolve("train-images-idx3-ubyte"), new byte[4 * 6], false, 4, 3, 2);
        IdxTest.writeIdx(tmp.resolve("train-labels-idx1-ubyte"), new byte[4], false, 4);
        IdxDataset data = IdxDataset.open(tmp, "train");
        try (IdxSource s =
                IdxSource.builder(data).floats(0.286f, 0.353f).batchSize(3).build()) {
            Normalization n = Normalization.fromDescription(s.description()).orElseThrow();
            assertEquals(new Normalization(0.286f, 0.353f), n);
            assertEquals((200 / 255f - 0.286f) / 0.353f, n.apply(200));
        }
        try (IdxSource s = IdxSource.builder(data).batchSize(3).build()) {
            assertEquals(Optional.of(Normalization.NONE), Normalization.fromDescription(s.description()));
        }
        try (IdxSource s = IdxSource.builder(data).uint8().batchSize(3).build()) {
            assertEquals(Optional.empty(), Normalization.fromDescription(s.description()));
        }
    }

    @Test
    void onlyWholeWordsCount() {
        assertEquals(
                Optional.empty(), Normalization.fromDescription("synthetic:samples=10,shape=4,dtype=float32,seed=1"));
        assertEquals(
                Optional.empty(),
                Normalization.fromDescription("image-folder transforms=Normalize(mean=(0.5, 0.5, 0.5))"));
        assertEquals(
                Optional.of(new Normalization(-1.5f, 2e-3f)), Normalization.fromDescription("x std=2e-3 mean=-1.5"));
    }

    @Test
    void halfOrGarbledAnnouncementsAreErrors() {
        assertThrows(IllegalArgumentException.class, () -> Normalization.fromDescription("idx mean=0.5 images=a"));
        assertThrows(IllegalArgumentException.class, () -> Normalization.fromDescription("idx mean=0.5 std=0"));
        assertThrows(IllegalArgumentException.class, () -> Normalization.fromDescription("idx mean=1e std=1"));
    }
}
