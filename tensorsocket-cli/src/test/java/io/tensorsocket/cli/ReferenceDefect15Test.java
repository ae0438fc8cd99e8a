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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The fifteenth defect of the reference implementation ({@link ReferenceDefectsTest} has the other fourteen): fixed
 * TCP ports on every interface, consumers that unpickle whatever arrives, producers that collide, logging
 * reconfigured on import. In a class of its own because it checks that this JVM holds no IP socket, which a Flight
 * test running beside it would open.
 */
@Isolated // it checks that this JVM holds no IP socket, which another class's Flight test would
class ReferenceDefect15Test extends ProcessTestBase {

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
}
