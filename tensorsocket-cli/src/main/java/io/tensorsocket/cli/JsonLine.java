package io.tensorsocket.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads back the flat JSON objects {@link Json} writes (string, number and boolean values). */
final class JsonLine {
    private static final Pattern FIELD =
            Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[^,}]+)");

    private JsonLine() {}

    static Map<String, String> parse(String line) {
        Map<String, String> m = new LinkedHashMap<>();
        Matcher x = FIELD.matcher(line);
        while (x.find()) {
            m.put(
                    x.group(1),
                    x.group(3) != null
                            ? x.group(3).replace("\\\"", "\"").replace("\\\\", "\\")
                            : x.group(2).trim());
        }
        return m;
    }
}
