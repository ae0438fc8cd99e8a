package io.tensorsocket.examples;

import io.tensorsocket.Batch;
import io.tensorsocket.BatchSource;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.Tensor;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import java.util.ArrayList;
import java.util.List;

/**
 * The code of the README's "Java: a producer and consumers", verbatim between the markers, so that the build
 * compiles it and {@link ReadmeExampleTest} runs it: a README snippet that stops compiling fails the build.
 */
// The README's code as a reader would write it: laid out by hand, exempt from the formatter, names in full where
// the README shows no imports.
@SuppressWarnings({"IntLongMath", "UnusedVariable", "UnnecessarilyFullyQualified"})
final class ReadmeExample {
    private ReadmeExample() {}

    // spotless:off
    // README producer begins
    /** Serves 1000 samples of 4 floats and a label, in batches of 100, for 2 epochs. */
    static TensorProducer startProducer(String name) {
        int samples = 1000, batchSize = 100;
        BatchSource source = BatchSource.fromIterable(epoch -> {
            List<Batch> batches = new ArrayList<>();   // your loader goes here
            for (int start = 0; start < samples; start += batchSize) {
                float[] x = new float[batchSize * 4];
                long[] y = new long[batchSize];
                for (int i = 0; i < batchSize; i++) {
                    java.util.Arrays.fill(x, i * 4, i * 4 + 4, start + i);
                    y[i] = (start + i) % 10;
                }
                batches.add(Batch.of("data", Tensor.ofFloats(x, batchSize, 4), "label", Tensor.ofLongs(y, batchSize)));
            }
            return batches;
        }, samples);
        return TensorProducer.builder().name(name).source(source).epochs(2).build()
                .start();                              // serves in the background; run() would block instead
    }
    // README producer ends

    // README consumer begins
    /** Reads both epochs at its own batch size, 64; returns the sum of every label seen. */
    static long consume(String name) {
        long labels = 0;
        try (TensorConsumer c = TensorConsumer.connect(name, ConsumerOptions.batchSize(64))) {
            for (int epoch = 1; epoch <= 2; epoch++) {
                for (Batch b : c) {                    // one epoch, every sample once, in the producer's order
                    Tensor x = b.tensor("data"), y = b.tensor("label");   // zero-copy, valid until the next batch
                    for (int i = 0; i < b.size(); i++) {
                        labels += y.getLong(i);        // x.getFloat(i * 4 + j): feature j of sample i
                    }
                }
                System.out.println("epoch " + epoch + " done");
            }
        }
        return labels;
    }
    // README consumer ends
    // spotless:on
}
