package io.tensorsocket.cli;

import static io.tensorsocket.cli.ReferenceDefectsTest.assertExact;
import static io.tensorsocket.cli.ReferenceDefectsTest.producer;
import static io.tensorsocket.cli.ReferenceDefectsTest.readEpochs;
import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import io.tensorsocket.TensorProducer;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The defects of the reference implementation whose tests count this JVM's own descriptors ({@link
 * ReferenceDefectsTest} has the others): the fifteenth (fixed TCP ports on every interface, consumers that unpickle
 * whatever arrives, producers that collide, logging reconfigured on import) and the fourteenth's shutdown half
 * (shutdown is not thread-safe, sockets never close). In a class of its own, run alone: a test of another class
 * running beside it opens descriptors and IP sockets of its own in this JVM.
 */
@Isolated // it counts this JVM's descriptors and IP sockets, which another class's tests would open beside it
class ReferenceDefect15Test extends ProcessTestBase {

    private static final String SPEC = "samples=105,shape=3x2,dtype=float32,seed=5";

    private TensorConsumer connect(String name, int batch) {
        return TensorConsumer.connect(base.resolve(name), ConsumerOptions.batchSize(batch));
    }

    @Test // 15: TCP ports on every interface; consumers unpickle whatever arrives; producers collide; logging
    // reconfigured
    void defect15_noPortsNoDeserialisationNoCollisionsNoLoggingChanges() throws Exception {
        Properties props = (Properties) System.getProperties().clone();
        var rootHandlers = List.of(Logger.getLogger("").getHandlers());
        try (TensorProducer a = producer(base, "d15a", "samples=50,shape=4,dtype=float32,seed=1", 10, 1)
                        .build();
                TensorProducer b = producer(base, "d15b", "samples=70,shape=4,dtype=float32,seed=2", 10, 1)
                        .build();
                TensorConsumer ca = connect("d15a", 10);
                TensorConsumer cb = connect("d15b", 10)) {
            a.start();
            b.start();
            // Two producers on one host, each found by its own name, each serving its own data.
            assertExact(readEpochs(ca, "samples=50,shape=4,dtype=float32,seed=1", 1), 50);
            assertExact(readEpochs(cb, "samples=70,shape=4,dtype=float32,seed=2", 1), 70);
            // No IP socket in this JVM (see AccessProcessTest for the processes).
            Set<Long> inet = new HashSet<>();
            for (String t : List.of("tcp", "tcp6", "udp", "udp6")) {
                List<String> lines = Files.readAllLines(Path.of("/proc/net", t));
                lines.subList(1, lines.size())
                        .forEach(l -> inet.add(Long.parseLong(l.trim().split("\\s+")[9])));
            }
            try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
                for (Path fd : fds.toList()) {
                    try {
                        String target = Files.readSymbolicLink(fd).toString();
                        if (target.startsWith("socket:[")) {
                            assertFalse(
                                    inet.contains(Long.parseLong(target.substring(8, target.length() - 1))), target);
                        }
                    } catch (IOException ignored) {
                        // closed meanwhile
                    }
                }
            }
            // A serialized Java object sent to the control socket is a bad frame, never deserialized.
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(new HashMap<>(Map.of("evil", "payload")));
            }
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(base.resolve("d15a").resolve("control.sock")));
                ch.write(ByteBuffer.wrap(bytes.toByteArray()));
                Message m = new MessageChannel(ch).read();
                assertInstanceOf(Message.Error.class, m);
                assertTrue(((Message.Error) m).message().contains("not a TensorSocket frame"), m.toString());
            }
        }
        // The library left logging and system properties as it found them.
        assertEquals(rootHandlers, List.of(Logger.getLogger("").getHandlers()));
        assertEquals(props, System.getProperties());
    }

    @Test // 14: shutdown is not thread-safe; sockets never close
    void defect14_concurrentShutdownClosesEverything() throws Exception {
        // A first round opens what the JDK opens once, on first use (pollers, thread pools' descriptors and the like);
        // the second, the same in every way, must give back every descriptor it took.
        closeConcurrently("d14w");
        Thread.sleep(200);
        Map<String, String> before = openFds();
        closeConcurrently("d14b");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (openFds().size() > before.size() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Map<String, String> after = openFds();
        after.keySet().removeAll(before.keySet());
        assertTrue(openFds().size() <= before.size(), "descriptors before " + before.size() + ", new ones " + after);
    }

    /** A producer and three consumers, each of them reading, closed from eight threads at once. */
    private void closeConcurrently(String name) throws Exception {
        TensorProducer p = producer(base, name, SPEC, 10, 0).build();
        List<TensorConsumer> cs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            cs.add(connect(name, 5));
        }
        p.start();
        for (TensorConsumer c : cs) {
            c.iterator().next();
        }
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> closes = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int k = i;
            closes.add(pool.submit(() -> {
                go.await();
                if (k % 2 == 0) {
                    p.close();
                } else {
                    cs.get(k % 3).close();
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : closes) {
            f.get(20, TimeUnit.SECONDS);
        }
        cs.forEach(TensorConsumer::close);
        pool.shutdown();
        assertTrue(pool.awaitTermination(20, TimeUnit.SECONDS));
        assertFalse(Files.exists(base.resolve(name)), "the socket and arena are removed");
    }

    /** This JVM's open descriptors: number to what each refers to. */
    private static Map<String, String> openFds() throws IOException {
        Map<String, String> fds = new TreeMap<>();
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : s.toList()) {
                try {
                    fds.put(
                            fd.getFileName().toString(),
                            Files.readSymbolicLink(fd).toString());
                } catch (IOException closedMeanwhile) {
                    // the descriptor list reads itself: one is gone by the time it is read
                }
            }
        }
        return fds;
    }
}
