package io.tensorsocket.pipeline;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A folder of images with one sub-folder per class, as torchvision's {@code ImageFolder} reads it:
 * {@code root/<class>/<file>.jpg|jpeg|png}. Classes are the sub-folder names sorted, labelled 0, 1, ...;
 * files within a class are sorted by name (searched recursively below the class folder), so every run
 * and every host sees the same sample ids.
 */
public final class ImageFolder {
    private final Path root;
    private final List<String> classes;
    private final List<Path> files;
    private final int[] labels;

    private ImageFolder(Path root, List<String> classes, List<Path> files, int[] labels) {
        this.root = root;
        this.classes = List.copyOf(classes);
        this.files = List.copyOf(files);
        this.labels = labels;
    }

    /**
     * Lists {@code root}.
     *
     * @throws IOException if it is not a readable folder or holds no images in class sub-folders
     */
    public static ImageFolder scan(Path root) throws IOException {
        if (!Files.exists(root)) {
            throw new NoSuchFileException(
                    root.toString(), null, "image folder does not exist; pass a folder with one sub-folder per class");
        }
        if (!Files.isDirectory(root)) {
            throw new FileSystemException(
                    root.toString(), null, "not a folder; pass a folder with one sub-folder per class");
        }
        List<Path> classDirs;
        long loose;
        try (Stream<Path> s = Files.list(root)) {
            List<Path> entries = s.filter(p -> !p.getFileName().toString().startsWith("."))
                    .sorted()
                    .toList();
            classDirs = entries.stream().filter(Files::isDirectory).toList();
            loose = entries.stream()
                    .filter(Files::isRegularFile)
                    .filter(ImageFolder::isImage)
                    .count();
        }
        // torchvision would ignore images lying in the root: a flat folder would serve nothing, or one class of
        // whatever sub-folder it also has. Both are mistakes in the layout, so say which layout is expected.
        if (loose > 0) {
            throw new IOException(
                    root + " holds " + loose + " image(s) directly, not in class sub-folders; arrange them as " + root
                            + "/<class>/<image>.jpg, one sub-folder per class");
        }
        List<String> classes = new ArrayList<>();
        List<Path> files = new ArrayList<>();
        List<Integer> labels = new ArrayList<>();
        for (Path dir : classDirs) {
            List<Path> images;
            try (Stream<Path> s = Files.walk(dir)) {
                images = s.filter(Files::isRegularFile)
                        .filter(ImageFolder::isImage)
                        .sorted()
                        .toList();
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
            // torchvision skips empty class folders when it builds the class list too.
            if (images.isEmpty()) {
                continue;
            }
            int label = classes.size();
            classes.add(dir.getFileName().toString());
            for (Path p : images) {
                files.add(p);
                labels.add(label);
            }
        }
        if (files.isEmpty()) {
            throw new IOException("no .jpg, .jpeg or .png files in class sub-folders of " + root
                    + "; arrange images as ROOT/<class>/<image>.jpg");
        }
        return new ImageFolder(
                root,
                classes,
                files,
                labels.stream().mapToInt(Integer::intValue).toArray());
    }

    static boolean isImage(Path p) {
        String n = p.getFileName().toString().toLowerCase(Locale.ROOT);
        return !n.startsWith(".") && (n.endsWith(".jpg") || n.endsWith(".jpeg") || n.endsWith(".png"));
    }

    public Path root() {
        return root;
    }

    /** Class names in label order. */
    public List<String> classes() {
        return classes;
    }

    /** Number of images. */
    public int size() {
        return files.size();
    }

    /** File of sample {@code id}. */
    public Path file(int id) {
        return files.get(id);
    }

    /** Label of sample {@code id}: the index of its class in {@link #classes()}. */
    public int label(int id) {
        return labels[id];
    }
}
