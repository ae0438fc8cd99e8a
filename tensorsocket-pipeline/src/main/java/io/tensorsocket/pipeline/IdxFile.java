package io.tensorsocket.pipeline;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;

/**
 * An IDX file of unsigned bytes, the format of MNIST and Fashion-MNIST, read whole into memory,
 * gzip-compressed or not (recognised by content, not name).
 *
 * <pre>
 *  offset  size  field
 *  0       2     0x0000
 *  2       1     element type: 0x08 = unsigned byte (the only one supported)
 *  3       1     number of dimensions d
 *  4       4*d   dimension sizes, big-endian int32
 *  4+4d    ...   elements, row-major
 * </pre>
 *
 * @param dims dimension sizes, the first being the number of samples
 * @param data all elements, row-major
 */
public record IdxFile(int[] dims, byte[] data) {
    private static final int UNSIGNED_BYTE = 0x08;

    public IdxFile {
        dims = dims.clone();
    }

    @Override
    public int[] dims() {
        return dims.clone();
    }

    /** Number of samples (the first dimension). */
    public int count() {
        return dims[0];
    }

    /** Elements per sample (the product of the other dimensions). */
    public int sampleSize() {
        int n = 1;
        for (int i = 1; i < dims.length; i++) {
            n *= dims[i];
        }
        return n;
    }

    /**
     * Reads {@code path}.
     *
     * @throws IOException if it is not an IDX file of unsigned bytes, or is truncated
     */
    public static IdxFile read(Path path) throws IOException {
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(path), 1 << 16)) {
            raw.mark(2);
            int b0 = raw.read();
            int b1 = raw.read();
            raw.reset();
            InputStream in = b0 == 0x1F && b1 == 0x8B ? new GZIPInputStream(raw, 1 << 16) : raw;
            return read(new DataInputStream(in), path);
        } catch (EOFException e) {
            throw new IOException(path + " ends early; the download is incomplete, fetch the file again", e);
        }
    }

    private static IdxFile read(DataInputStream in, Path path) throws IOException {
        int magic = in.readInt();
        int type = (magic >>> 8) & 0xFF;
        int rank = magic & 0xFF;
        if ((magic >>> 16) != 0 || rank < 1) {
            throw new IOException(path + " is not an IDX file (magic 0x" + Integer.toHexString(magic)
                    + "); pass MNIST-format files such as train-images-idx3-ubyte.gz");
        }
        if (type != UNSIGNED_BYTE) {
            throw new IOException(path + " holds IDX element type 0x" + Integer.toHexString(type)
                    + "; only unsigned bytes (0x08), as in MNIST and Fashion-MNIST, are supported");
        }
        int[] dims = new int[rank];
        long total = 1;
        for (int i = 0; i < rank; i++) {
            dims[i] = in.readInt();
            if (dims[i] < 0) {
                throw new IOException(
                        path + " has a negative dimension " + dims[i] + "; the file is corrupt, fetch it again");
            }
            total *= dims[i];
        }
        if (total > Integer.MAX_VALUE - 16) {
            throw new IOException(
                    path + " has " + total + " elements " + Arrays.toString(dims) + "; at most 2 GiB is supported");
        }
        byte[] data = new byte[(int) total];
        in.readFully(data);
        return new IdxFile(dims, data);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdxFile f && Arrays.equals(f.dims, dims) && Arrays.equals(f.data, data);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(dims) + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
        return "IdxFile" + Arrays.toString(dims);
    }
}
