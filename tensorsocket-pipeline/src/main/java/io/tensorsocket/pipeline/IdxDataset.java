package io.tensorsocket.pipeline;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Images and labels from a pair of IDX files (MNIST, Fashion-MNIST, KMNIST, ...): images
 * {@code [N, rows, cols]} of unsigned bytes, labels {@code [N]}.
 */
public final class IdxDataset {
    private final Path images;
    private final IdxFile pixels;
    private final IdxFile labels;

    private IdxDataset(Path images, IdxFile pixels, IdxFile labels) {
        this.images = images;
        this.pixels = pixels;
        this.labels = labels;
    }

    /**
     * Reads an images file and its labels file.
     *
     * @throws IOException if either cannot be read or they do not match
     */
    public static IdxDataset of(Path images, Path labels) throws IOException {
        IdxFile px = IdxFile.read(images);
        IdxFile lb = IdxFile.read(labels);
        if (px.dims().length != 3) {
            throw new IOException(
                    images + " has " + px.dims().length + " dimensions; an images file has 3 (count, rows, columns)");
        }
        if (lb.dims().length != 1) {
            throw new IOException(labels + " has " + lb.dims().length + " dimensions; a labels file has 1 (count)");
        }
        if (px.count() != lb.count()) {
            throw new IOException(images + " holds " + px.count() + " images but " + labels + " holds " + lb.count()
                    + " labels; pair files of the same split (train with train, t10k with t10k)");
        }
        if (px.count() == 0) {
            throw new IOException(images + " holds no images");
        }
        return new IdxDataset(images, px, lb);
    }

    /**
     * Finds the split {@code split} ({@code train}, or {@code test}/{@code t10k}) in {@code dir}, named
     * as MNIST distributes it: {@code <split>-images-idx3-ubyte[.gz]} and {@code <split>-labels-idx1-ubyte[.gz]}
     * (a dot instead of the second hyphen is accepted too).
     *
     * @throws IOException if the files are missing or unreadable
     */
    public static IdxDataset open(Path dir, String split) throws IOException {
        String prefix = switch (split.trim().toLowerCase(Locale.ROOT)) {
            case "train" -> "train";
            case "test", "t10k" -> "t10k";
            default -> throw new IllegalArgumentException("unknown split '" + split + "': use train or test");
        };
        return of(find(dir, prefix, "images", 3), find(dir, prefix, "labels", 1));
    }

    private static Path find(Path dir, String prefix, String kind, int rank) throws IOException {
        List<String> names =
                List.of(prefix + "-" + kind + "-idx" + rank + "-ubyte", prefix + "-" + kind + ".idx" + rank + "-ubyte");
        for (String n : names) {
            for (String suffix : List.of("", ".gz")) {
                Path p = dir.resolve(n + suffix);
                if (Files.isRegularFile(p)) {
                    return p;
                }
            }
        }
        throw new NoSuchFileException(
                dir.resolve(names.getFirst()) + "[.gz]",
                null,
                "IDX " + kind + " file not found; pass the folder holding the MNIST-format files"
                        + " (Fashion-MNIST on Debian: apt-get install dataset-fashion-mnist, then /usr/share/datasets/fashion-mnist)");
    }

    /** Number of samples. */
    public int size() {
        return pixels.count();
    }

    public int rows() {
        return pixels.dims()[1];
    }

    public int cols() {
        return pixels.dims()[2];
    }

    /** The image bytes of all samples, {@code rows * cols} per sample; do not modify. */
    byte[] pixelData() {
        return pixels.data();
    }

    /** Label of sample {@code id}. */
    public int label(int id) {
        return labels.data()[id] & 0xFF;
    }

    /** The images file, for messages. */
    public Path imagesFile() {
        return images;
    }
}
