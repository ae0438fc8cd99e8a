package io.tensorsocket.pipeline;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads transforms written as in Python, so a command line can take what a torchvision user already
 * has: {@code RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 1.3333))},
 * {@code Resize(256)}, {@code Resize((224, 224))}, {@code CenterCrop(224)},
 * {@code RandomHorizontalFlip(0.5)} (or {@code p=0.5}; default 0.5), {@code Normalize(imagenet)} or
 * {@code Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))}. Steps are separated by commas; a
 * {@code transforms.} prefix is ignored.
 */
public final class TransformParser {
    private final String text;
    private int pos;

    private TransformParser(String text) {
        this.text = text;
    }

    /**
     * Parses a comma-separated list of steps.
     *
     * @throws IllegalArgumentException pointing at the position that could not be read
     */
    public static List<Transform> parse(String text) {
        TransformParser p = new TransformParser(text);
        List<Transform> steps = new ArrayList<>();
        p.skipSpace();
        while (p.pos < text.length()) {
            steps.add(p.step());
            p.skipSpace();
            if (p.pos < text.length()) {
                p.expect(',');
                p.skipSpace();
            }
        }
        if (steps.isEmpty()) {
            throw new IllegalArgumentException(
                    "no transforms given; write for example \"RandomResizedCrop(224), RandomHorizontalFlip(0.5)\"");
        }
        return steps;
    }

    private Transform step() {
        int start = pos;
        String name = identifier();
        if (name.startsWith("transforms.")) {
            name = name.substring("transforms.".length());
        }
        List<Object> positional = new ArrayList<>();
        Map<String, Object> named = new LinkedHashMap<>();
        skipSpace();
        expect('(');
        skipSpace();
        while (peek() != ')') {
            int save = pos;
            String key = null;
            if (Character.isLetter(peek())) {
                String id = identifier();
                skipSpace();
                if (peek() == '=') {
                    pos++;
                    skipSpace();
                    key = id;
                } else {
                    pos = save;
                }
            }
            Object v = value();
            if (key != null) {
                named.put(key, v);
            } else {
                positional.add(v);
            }
            skipSpace();
            if (peek() != ')') {
                expect(',');
                skipSpace();
            }
        }
        pos++;
        try {
            return build(name, positional, named);
        } catch (IllegalArgumentException | ClassCastException | IndexOutOfBoundsException e) {
            throw new IllegalArgumentException(
                    "cannot read transform '" + text.substring(start, pos) + "': " + e.getMessage()
                            + "; see TransformParser for the accepted forms",
                    e);
        }
    }

    private static Transform build(String name, List<Object> pos, Map<String, Object> named) {
        Object first = pos.isEmpty() ? named.get("size") : pos.getFirst();
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "randomresizedcrop" -> {
                int[] hw = size(first);
                double[] scale = pair(pos.size() > 1 ? pos.get(1) : named.getOrDefault("scale", List.of(0.08, 1.0)));
                double[] ratio =
                        pair(pos.size() > 2 ? pos.get(2) : named.getOrDefault("ratio", List.of(3.0 / 4, 4.0 / 3)));
                yield new Transform.RandomResizedCrop(hw[0], hw[1], scale[0], scale[1], ratio[0], ratio[1]);
            }
            case "resize" ->
                first instanceof List<?>
                        ? Transform.resize(size(first)[0], size(first)[1])
                        : Transform.resize((int) number(first));
            case "centercrop" -> new Transform.CenterCrop(size(first)[0], size(first)[1]);
            case "randomhorizontalflip" ->
                Transform.randomHorizontalFlip(number(pos.isEmpty() ? named.getOrDefault("p", 0.5) : pos.getFirst()));
            case "normalize" -> {
                if ("imagenet".equals(first)) {
                    yield Transform.normalize(Transform.IMAGENET_MEAN, Transform.IMAGENET_STD);
                }
                Object mean = pos.isEmpty() ? named.get("mean") : pos.get(0);
                Object std = pos.size() > 1 ? pos.get(1) : named.get("std");
                if (mean == null || std == null) {
                    throw new IllegalArgumentException("Normalize needs mean and std, or the word imagenet");
                }
                yield Transform.normalize(floats(mean), floats(std));
            }
            default ->
                throw new IllegalArgumentException("unknown transform " + name
                        + "; use RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip or Normalize");
        };
    }

    private static int[] size(Object v) {
        if (v == null) {
            throw new IllegalArgumentException("a size is required");
        }
        if (v instanceof List<?> l) {
            if (l.size() == 1) {
                return new int[] {(int) number(l.get(0)), (int) number(l.get(0))};
            }
            if (l.size() != 2) {
                throw new IllegalArgumentException("size must be one number or (height, width)");
            }
            return new int[] {(int) number(l.get(0)), (int) number(l.get(1))};
        }
        int s = (int) number(v);
        return new int[] {s, s};
    }

    private static double[] pair(Object v) {
        List<?> l = (List<?>) v;
        if (l.size() != 2) {
            throw new IllegalArgumentException("expected a pair (min, max), got " + l);
        }
        return new double[] {number(l.get(0)), number(l.get(1))};
    }

    private static float[] floats(Object v) {
        List<?> l = (List<?>) v;
        float[] f = new float[l.size()];
        for (int i = 0; i < f.length; i++) {
            f[i] = (float) number(l.get(i));
        }
        return f;
    }

    private static double number(Object v) {
        if (v instanceof Double d) {
            return d;
        }
        throw new IllegalArgumentException("expected a number, got " + v);
    }

    private Object value() {
        char c = peek();
        if (c == '(' || c == '[') {
            char close = c == '(' ? ')' : ']';
            pos++;
            List<Object> items = new ArrayList<>();
            skipSpace();
            while (peek() != close) {
                items.add(value());
                skipSpace();
                if (peek() != close) {
                    expect(',');
                    skipSpace();
                }
            }
            pos++;
            return items;
        }
        if (Character.isLetter(c)) {
            return identifier().toLowerCase(Locale.ROOT);
        }
        int start = pos;
        while (pos < text.length() && "+-.0123456789eE/".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
        String num = text.substring(start, pos);
        try {
            int slash = num.indexOf('/');
            // Python users write ratios as fractions: ratio=(3/4, 4/3).
            return slash > 0
                    ? Double.parseDouble(num.substring(0, slash)) / Double.parseDouble(num.substring(slash + 1))
                    : Double.parseDouble(num);
        } catch (NumberFormatException e) {
            throw error("a number");
        }
    }

    private String identifier() {
        int start = pos;
        while (pos < text.length()
                && (Character.isLetterOrDigit(text.charAt(pos))
                        || text.charAt(pos) == '_'
                        || text.charAt(pos) == '.')) {
            pos++;
        }
        if (start == pos) {
            throw error("a name");
        }
        return text.substring(start, pos);
    }

    private char peek() {
        if (pos >= text.length()) {
            throw error("more input");
        }
        return text.charAt(pos);
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("'" + c + "'");
        }
        pos++;
    }

    private void skipSpace() {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
            pos++;
        }
    }

    private IllegalArgumentException error(String expected) {
        return new IllegalArgumentException(
                "cannot read transforms \"" + text + "\": expected " + expected + " at position " + pos);
    }
}
