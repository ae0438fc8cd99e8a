package io.tensorsocket.spi;

import static org.junit.jupiter.api.Assertions.*;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.TensorConsumer;
import org.junit.jupiter.api.Test;

/** A URI name reaches its scheme's connector; without one the consumer is told which module to add, or how to name a producer. */
class RemoteConnectorTest {

    @Test
    void aGrpcNameWithoutTheFlightModuleSaysWhichModuleToAdd() {
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> TensorConsumer.connect("grpc://127.0.0.1:1/p", ConsumerOptions.batchSize(1)));
        assertTrue(e.getMessage().contains("needs the module tensorsocket-flight"), e.getMessage());
    }

    @Test
    void anUnknownSchemeIsRefusedWithHowProducersAreNamed() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> TensorConsumer.connect("FOO://h/p", ConsumerOptions.batchSize(1)));
        assertTrue(
                e.getMessage().contains("has scheme 'foo'") && e.getMessage().contains("grpc://HOST:PORT/NAME"),
                e.getMessage());
    }
}
