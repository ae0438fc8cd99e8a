package io.tensorsocket.cli;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** One JSON object per line, as the commands print their results. Keys keep insertion order. */
final class Json {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    static Json object() {
        return new Json();
    }

    Json put(String key, Object value) {
        fields.put(key, value);
        return this;
    }

    /** A value that is already JSON (an array or object), written as is. */
    Json putRaw(String key, String json) {
        fields.put(key, new Raw(json));
        return this;
    }

    private record Raw(String json) {}

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (!first) {
                s.append(", ");
            }
            first = false;
            quote(s, e.getKey());
            s.append(": ");
            Object v = e.getValue();
            if (v == null) {
                s.append("null");
            } else if (v instanceof Raw r) {
                s.append(r.json());
            } else if (v instanceof Double d) {
                s.append(Double.isFinite(d) ? String.format(Locale.ROOT, "%.3f", d) : "null");
            } else if (v instanceof Number || v instanceof Boolean) {
                s.append(v);
            } else {
                quote(s, v.toString());
            }
        }
        return s.append('}').toString();
    }

    private static void quote(StringBuilder s, String v) {
        s.append('"');
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            switch (c) {
                case '"' -> s.append("\\\"");
                case '\\' -> s.append("\\\\");
                case '\n' -> s.append("\\n");
                case '\r' -> s.append("\\r");
                case '\t' -> s.append("\\t");
                default -> {
                    if (c < 0x20) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
                }
            }
        }
        s.append('"');
    }
}
