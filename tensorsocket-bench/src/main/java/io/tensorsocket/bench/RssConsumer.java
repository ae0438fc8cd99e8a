package io.tensorsocket.bench;

import io.tensorsocket.Batch;
import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;

/**
 * A consumer process that connects, reads {@code batches} batches (every byte), and prints its resident
 * memory: {@code RSS kb=<VmRSS> anon_kb=<RssAnon> shmem_kb=<RssShmem>}. With 0 batches it is the baseline:
 * a consumer that connected and mapped the arena but read nothing. Arguments: directory, batch size, batches.
 */
public final class RssConsumer {
    @SuppressWarnings("UnusedVariable") // a blackhole: written so the JIT keeps the reads, never read
    private static volatile long sink;

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int batchSize = Integer.parseInt(args[1]);
        int batches = Integer.parseInt(args[2]);
        try (TensorConsumer c = TensorConsumer.connect(
                dir, ConsumerOptions.batchSize(batchSize).withConnectTimeout(Duration.ofSeconds(30)))) {
            Iterator<Batch> it = c.iterator();
            long acc = 0;
            for (int i = 0; i < batches && it.hasNext(); i++) {
                MemorySegment data = it.next().tensor(ReplaySource.DATA).data();
                long words = data.byteSize() / 8;
                for (long w = 0; w < words; w++) {
                    acc += data.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, w);
                }
            }
            sink = acc;
            if (batches == 0) {
                Thread.sleep(500);
            }
            System.out.println(
                    "RSS kb=" + field("VmRSS") + " anon_kb=" + field("RssAnon") + " shmem_kb=" + field("RssShmem"));
            System.out.flush();
        }
    }

    private static long field(String name) throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith(name + ":")) {
                return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
