package io.tensorsocket.cli;

import io.tensorsocket.pipeline.SyntheticImages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.IntStream;

/** The demo's data: photo-like JPEGs made once and kept in the user's cache directory. */
final class DemoImages {
    static final int WIDTH = 500;
    static final int HEIGHT = 375;

    private DemoImages() {}

    /** {@code $XDG_CACHE_HOME/tensorsocket/demo-jpegs}, or {@code ~/.cache/...}, or the temp directory. */
    static Path defaultFolder() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path cache = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        if (!Files.isWritable(cache.getParent() == null ? cache : cache.getParent()) && !Files.isWritable(cache)) {
            cache = Path.of(System.getProperty("java.io.tmpdir"));
        }
        return cache.resolve("tensorsocket").resolve("demo-jpegs");
    }

    /** Whether {@link #ensure} already made these images. */
    static boolean isReady(Path root, int count, int classes) {
        return Files.exists(root.resolve(".complete-" + count + "-" + classes + "-" + WIDTH + "x" + HEIGHT));
    }

    /**
     * Makes {@code count} images over {@code classes} classes in {@code root} unless already there. Demos started
     * together may make the same folder at once: each writes its own temporary files and moves each image into place
     * whole (the images are the same bytes whoever makes them), so none fails and none reads half an image.
     */
    static Path ensure(Path root, int count, int classes) throws IOException {
        Path done = root.resolve(".complete-" + count + "-" + classes + "-" + WIDTH + "x" + HEIGHT);
        if (Files.exists(done)) {
            return root;
        }
        try {
            IntStream.range(0, count).parallel().forEach(i -> {
                try {
                    Path dir = root.resolve(String.format("class_%02d", i % classes));
                    Files.createDirectories(dir);
                    Path f = dir.resolve(String.format("img_%05d.jpg", i));
                    Path part = dir.resolve(String.format(
                            ".img_%05d.jpg.%d.part", i, ProcessHandle.current().pid()));
                    SyntheticImages.writeJpeg(SyntheticImages.photoLike(WIDTH, HEIGHT, i), part, 0.9f);
                    Files.move(part, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        try {
            Files.createFile(done);
        } catch (FileAlreadyExistsException e) {
            // another demo made them at the same time
        }
        return root;
    }
}
