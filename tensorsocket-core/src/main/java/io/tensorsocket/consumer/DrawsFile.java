package io.tensorsocket.consumer;

import io.tensorsocket.directory.ProducerDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A producer's {@code draws} file as a consumer reads it to checkpoint its place (its format is the producer's
 * {@code DrawLog}'s): the order key, data set size and shuffling, and the draws that replay an epoch's orders.
 */
record DrawsFile(Map<String, Long> header, TreeMap<Long, long[]> draws) {

    /** The draws of the producer in {@code dir}, or null where it logs none (its source fixes its own order). */
    static DrawsFile read(Path dir) {
        String text;
        try {
            text = Files.readString(dir.resolve(ProducerDirectory.DRAWS_FILE));
        } catch (IOException e) {
            return null;
        }
        String[] lines = text.split("\n", -1); // the last piece, after the last newline, may be a line being written
        if (lines.length < 3 || !lines[0].equals("tensorsocket-draws 1")) {
            return null;
        }
        Map<String, Long> header = new HashMap<>();
        String[] words = lines[1].trim().split(" ");
        for (int i = 0; i + 1 < words.length; i += 2) {
            header.put(words[i], Long.parseLong(words[i + 1]));
        }
        TreeMap<Long, long[]> draws = new TreeMap<>();
        for (int i = 2; i < lines.length - 1; i++) {
            String[] v = lines[i].trim().split(" ");
            long[] boundaries = new long[v.length - 1];
            for (int j = 1; j < v.length; j++) {
                boundaries[j - 1] = Long.parseLong(v[j]);
            }
            draws.put(Long.parseLong(v[0]), boundaries);
        }
        return new DrawsFile(header, draws);
    }

    /**
     * The draws that replay epochs {@code first} to {@code last} (those drawn), from the fresh draw they follow on,
     * flat: epoch, boundary count, boundaries, ...
     */
    long[] chain(long first, long last) {
        long start = first;
        while (draws.containsKey(start - 1) && draws.containsKey(start) && draws.get(start).length > 0) {
            start--; // a draw with boundaries continues the one before it
        }
        List<Long> flat = new ArrayList<>();
        for (long e = start; e <= last && draws.containsKey(e); e++) {
            long[] b = draws.get(e);
            flat.add(e);
            flat.add((long) b.length);
            for (long x : b) {
                flat.add(x);
            }
        }
        return flat.stream().mapToLong(Long::longValue).toArray();
    }
}
