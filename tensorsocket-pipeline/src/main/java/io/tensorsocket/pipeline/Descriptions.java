package io.tensorsocket.pipeline;

import java.nio.charset.StandardCharsets;

/** Keeps source descriptions within the 4096 bytes that consumers receive. */
final class Descriptions {
    private static final int MAX_BYTES = 4096;

    private Descriptions() {}

    /** {@code s}, cut at a character boundary so its UTF-8 form fits, ending in "..." if cut. */
    static String limit(String s) {
        if (s.getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES) {
            return s;
        }
        int bytes = 0;
        int end = 0;
        while (end < s.length()) {
            int cp = s.codePointAt(end);
            int len = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
            if (bytes + len > MAX_BYTES - 3) {
                break;
            }
            bytes += len;
            end += Character.charCount(cp);
        }
        return s.substring(0, end) + "...";
    }
}
