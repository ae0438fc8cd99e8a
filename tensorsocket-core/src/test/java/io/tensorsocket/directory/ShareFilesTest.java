package io.tensorsocket.directory;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A share's lock and log: one starter at a time, and nothing left after a clean end unless still in use. */
class ShareFilesTest {
    @TempDir
    Path base;

    @Test
    void theStartLockIsHeldByOneHolderAtATimeAndMadeWhenMissing() throws Exception {
        Path file = base.resolve(".s.share.lock");
        assertNull(StartLock.tryTake(file), "tryTake does not make the file");
        try (StartLock held = StartLock.take(file, System.nanoTime() + 1_000_000_000L, IllegalStateException::new)) {
            assertTrue(Files.exists(file));
            assertNull(StartLock.tryTake(file), "held");
            IllegalStateException tooLong = new IllegalStateException("too long");
            assertSame(
                    tooLong,
                    assertThrows(
                            IllegalStateException.class,
                            () -> StartLock.take(file, System.nanoTime() + 50_000_000L, () -> tooLong)));
        }
        try (StartLock again = StartLock.tryTake(file)) {
            assertNotNull(again, "let go on close");
        }
    }

    @Test
    void aStarterAfterTheFileWasRemovedLocksTheNewFileNotTheOldOne() throws Exception {
        Path file = base.resolve(".s.share.lock");
        try (StartLock old = StartLock.take(file, System.nanoTime() + 1_000_000_000L, IllegalStateException::new)) {
            Files.delete(file); // a clean end removes the file while holding its lock
            try (StartLock next =
                    StartLock.take(file, System.nanoTime() + 1_000_000_000L, IllegalStateException::new)) {
                assertTrue(Files.exists(file), "made again");
                assertNull(StartLock.tryTake(file), "the new file is the one held");
            }
        }
    }

    @Test
    void aCleanEndRemovesBothFilesUnlessAStarterOrAProducerOfTheNameUsesThem() throws Exception {
        Path lock = base.resolve(".s.share.lock");
        Path log = base.resolve(".s.share.log");
        Files.writeString(log, "--- started\n");
        try (StartLock starting =
                StartLock.take(lock, System.nanoTime() + 1_000_000_000L, IllegalStateException::new)) {
            ShareFiles.removeUnused(base, "s");
            assertTrue(Files.exists(lock) && Files.exists(log), "a caller is starting the next producer");
        }
        try (TensorProducer running = TensorProducer.builder()
                .directory(base.resolve("s"))
                .source(new SyntheticSource(SyntheticSpec.parse("samples=10"), 2))
                .build()) {
            ShareFiles.removeUnused(base, "s");
            assertTrue(Files.exists(lock) && Files.exists(log), "a producer of the name runs");
        }
        ShareFiles.removeUnused(base, "s");
        assertFalse(Files.exists(lock), "lock left");
        assertFalse(Files.exists(log), "log left");
        ShareFiles.removeUnused(base, "s"); // gone already: nothing to do
    }
}
