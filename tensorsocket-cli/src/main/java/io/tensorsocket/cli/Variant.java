package io.tensorsocket.cli;

import io.tensorsocket.directory.ProducerDirectory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One {@code serve --variant NAME=TRANSFORMS}: the same images served by another producer, {@code NAME}, with other
 * transforms; every variant of a {@code serve} reads the one decoded-sample cache ({@code --cache-mb}), so a sweep
 * whose trials augment differently decodes each image once.
 */
record Variant(String name, String transforms) {

    /** Parses {@code NAME=TRANSFORMS}, refusing what cannot be a variant of {@code mainName}'s images. */
    static List<Variant> parseAll(List<String> given, SourceOptions source, String mainName) {
        List<Variant> out = new ArrayList<>();
        if (given.isEmpty()) {
            return out;
        }
        if (source.kind.images == null) {
            throw new IllegalArgumentException(
                    "--variant serves an image folder with other transforms: it applies to --images sources");
        }
        if (mainName == null) {
            throw new IllegalArgumentException("--variant needs the producer named with --name (variants are named"
                    + " producers beside it), not --dir");
        }
        Set<String> names = new HashSet<>(Set.of(mainName));
        for (String g : given) {
            int eq = g.indexOf('=');
            if (eq <= 0 || eq == g.length() - 1) {
                throw new IllegalArgumentException("--variant " + g + ": write NAME=TRANSFORMS, e.g. --variant "
                        + mainName + "-light=\"RandomResizedCrop(224, scale=(0.6, 1.0)), Normalize(imagenet)\"");
            }
            String name = g.substring(0, eq).strip();
            ProducerDirectory.checkName(name);
            if (!names.add(name)) {
                throw new IllegalArgumentException(
                        "--variant " + name + ": that name is taken by the producer or another variant");
            }
            out.add(new Variant(name, g.substring(eq + 1).strip()));
        }
        return out;
    }
}
