package io.tensorsocket.cli;

import io.tensorsocket.TensorProducer;
import io.tensorsocket.source.SyntheticSource;
import io.tensorsocket.source.SyntheticSpec;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code tensorsocket demo}: one producer on synthetic data, several consumer processes with different
 * batch sizes, every sample verified.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Serve synthetic data to several consumer processes with different batch sizes and verify every sample.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--consumers", defaultValue = "3", description = "Consumer processes (default ${DEFAULT-VALUE}).")
    int consumers;

    @Option(names = "--samples", defaultValue = "20000", description = "Samples per epoch (default ${DEFAULT-VALUE}).")
    long samples;

    @Option(names = "--epochs", defaultValue = "2", description = "Epochs (default ${DEFAULT-VALUE}).")
    long epochs;

    @Option(names = "--batch-size", defaultValue = "64", description = "The producer's batch size (default ${DEFAULT-VALUE}).")
    int batchSize;

    @Override
    public Integer call() throws Exception {
        if (consumers < 1) {
            throw new IllegalArgumentException("--consumers must be at least 1");
        }
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        SyntheticSpec spec = SyntheticSpec.parse("samples=" + samples + ",shape=3x32x32,dtype=float32,seed=42");
        Path dir = Files.createTempDirectory("tensorsocket-demo-").resolve("producer");
        int[] sizes = {batchSize, batchSize / 2 + 1, batchSize * 3, 100, 7};
        System.out.printf("producer: %s, batch size %d, %d epochs; %d consumer processes%n", spec.format(), batchSize,
                epochs, consumers);
        List<Process> procs = new ArrayList<>();
        try (TensorProducer p = TensorProducer.builder().directory(dir).source(new SyntheticSource(spec, batchSize))
                .epochs(epochs).minConsumers(consumers).build()) {
            p.start();
            for (int i = 0; i < consumers; i++) {
                int b = Math.max(1, sizes[i % sizes.length]);
                procs.add(new ProcessBuilder(Launcher.javaCommand("consume", "--dir", dir.toString(), "--batch-size",
                        Integer.toString(b))).redirectErrorStream(false).start());
            }
            boolean ok = true;
            System.out.printf("%-9s %-10s %-7s %-9s %-8s %-10s %-8s %-12s%n", "consumer", "batch", "epoch", "samples",
                    "unique", "duplicate", "corrupt", "samples/s");
            for (int i = 0; i < procs.size(); i++) {
                Process proc = procs.get(i);
                List<String> lines = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))
                        .lines().toList();
                String err = new String(proc.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).trim();
                if (!proc.waitFor(5, TimeUnit.MINUTES) || proc.exitValue() != 0) {
                    ok = false;
                    System.out.printf("consumer %d failed: %s%n", i, err.lines().reduce((a, b) -> b).orElse("?"));
                }
                for (String line : lines) {
                    var f = JsonLine.parse(line);
                    System.out.printf("%-9d %-10s %-7s %-9s %-8s %-10s %-8s %-12.0f%n", i, f.get("batch_size"), f.get("epoch"),
                            f.get("samples"), f.get("unique"), f.get("duplicates"), f.get("corrupt"),
                            Double.parseDouble(f.get("samples_per_s")));
                }
            }
            p.await(java.time.Duration.ofSeconds(30));
            System.out.println(ok ? "every consumer received every sample exactly once, byte-identical"
                    : "some consumers failed");
            return ok ? 0 : 1;
        } finally {
            for (Process proc : procs) {
                proc.destroyForcibly();
            }
        }
    }
}
