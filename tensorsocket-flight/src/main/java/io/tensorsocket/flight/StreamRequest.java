package io.tensorsocket.flight;

import io.tensorsocket.StartPolicy;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a remote consumer asks for: the Flight ticket of its DoGet. The ticket is UTF-8 text, an
 * {@code application/x-www-form-urlencoded} query string so any Flight client can write it:
 *
 * <pre>
 *   v=1&amp;name=train&amp;batch_size=64&amp;drop_last=0&amp;epochs=0&amp;batch_timeout_ms=120000&amp;start=join_now
 *   │    │          │             │           │         │                      └ start policy (optional):
 *   │    │          │             │           │         │                        join_now or next_epoch_start
 *   │    │          │             │           │         └ bound on the wait for any one batch (optional)
 *   │    │          │             │           └ epochs to stream, 0 = until the producer's stream ends (optional)
 *   │    │          │             └ 1: drop each epoch's short last batch (optional, default 0)
 *   │    │          └ the consumer's batch size (required, &gt;= 1)
 *   │    └ the producer's name (required; the server serves one producer)
 *   └ ticket version (required, 1)
 * </pre>
 *
 * Unknown keys are refused, so a newer client never silently loses an option.
 *
 * @param name           producer name
 * @param batchSize      consumer batch size
 * @param dropLast       drop each epoch's short last batch
 * @param epochs         epochs to stream; 0 streams until the producer's stream ends
 * @param batchTimeout   bound on the server's wait for any one batch
 * @param startPolicy    what the server's consumer does when it arrives after the epoch's start has left
 *                       the rubber band (as {@link io.tensorsocket.ConsumerOptions#withStartPolicy})
 */
public record StreamRequest(
        String name, int batchSize, boolean dropLast, long epochs, Duration batchTimeout, StartPolicy startPolicy) {

    /** The ticket version this code writes and reads. */
    public static final int VERSION = 1;

    public StreamRequest {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a stream request needs a producer name");
        }
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
        }
        if (epochs < 0) {
            throw new IllegalArgumentException("epochs must be >= 0 (0: until the stream ends), got " + epochs);
        }
        if (batchTimeout == null || batchTimeout.isNegative() || batchTimeout.isZero()) {
            throw new IllegalArgumentException("batch timeout must be positive, got " + batchTimeout);
        }
        if (startPolicy == null) {
            throw new IllegalArgumentException("a stream request needs a start policy");
        }
    }

    /** The ticket bytes. */
    public byte[] encode() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("v", Integer.toString(VERSION));
        m.put("name", name);
        m.put("batch_size", Integer.toString(batchSize));
        m.put("drop_last", dropLast ? "1" : "0");
        m.put("epochs", Long.toString(epochs));
        m.put("batch_timeout_ms", Long.toString(batchTimeout.toMillis()));
        m.put("start", startPolicy.label());
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> {
            if (!sb.isEmpty()) {
                sb.append('&');
            }
            sb.append(k).append('=').append(URLEncoder.encode(v, StandardCharsets.UTF_8));
        });
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Reads a ticket.
     *
     * @throws IllegalArgumentException naming what is wrong with it
     */
    public static StreamRequest parse(byte[] ticket) {
        if (ticket.length > 4096) {
            throw new IllegalArgumentException(
                    "ticket of " + ticket.length + " bytes is too long for a stream request");
        }
        String text = new String(ticket, StandardCharsets.UTF_8);
        Map<String, String> m = new LinkedHashMap<>();
        for (String part : text.split("&")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("ticket part '" + part + "' is not key=value");
            }
            String key = part.substring(0, eq);
            if (m.put(key, URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8)) != null) {
                throw new IllegalArgumentException("ticket key '" + key + "' appears twice");
            }
        }
        String v = m.remove("v");
        if (!Integer.toString(VERSION).equals(v)) {
            throw new IllegalArgumentException(
                    "ticket version " + v + " is not supported; this server reads version " + VERSION);
        }
        String name = m.remove("name");
        String batch = m.remove("batch_size");
        if (name == null || batch == null) {
            throw new IllegalArgumentException("ticket needs name and batch_size");
        }
        boolean dropLast = "1".equals(m.getOrDefault("drop_last", "0"));
        m.remove("drop_last");
        long epochs = number(m.remove("epochs"), 0);
        long timeoutMs = number(m.remove("batch_timeout_ms"), 120_000);
        StartPolicy start = startPolicy(m.remove("start"));
        if (!m.isEmpty()) {
            throw new IllegalArgumentException("ticket has unknown keys " + m.keySet());
        }
        long b = number(batch, 0);
        if (b > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("batch size " + b + " is too large");
        }
        return new StreamRequest(name, (int) b, dropLast, epochs, Duration.ofMillis(timeoutMs), start);
    }

    private static StartPolicy startPolicy(String label) {
        if (label == null) {
            return StartPolicy.JOIN_NOW;
        }
        for (StartPolicy p : StartPolicy.values()) {
            if (p.label().equals(label)) {
                return p;
            }
        }
        throw new IllegalArgumentException("ticket start '" + label + "' is neither join_now nor next_epoch_start");
    }

    private static long number(String text, long dflt) {
        if (text == null) {
            return dflt;
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("ticket value '" + text + "' is not a number", e);
        }
    }
}
