package io.tensorsocket.spi;

import io.tensorsocket.Batch;
import io.tensorsocket.StartMode;
import io.tensorsocket.TensorSpec;
import java.util.List;

/**
 * A consumer of a producer on another host, as a {@link RemoteConnector} opens it. {@link
 * io.tensorsocket.TensorConsumer} hands every call on to it, so each method has the meaning of the
 * {@code TensorConsumer} method of the same name: one epoch per iteration, exactly once and in order,
 * each batch valid until the next is asked for.
 */
public interface RemoteStream extends Iterable<Batch>, AutoCloseable {

    long size();

    long samplesPerEpoch();

    int batchSize();

    int producerBatchSize();

    long epoch();

    StartMode startMode();

    long startEpoch();

    long startSample();

    long streamPosition(Batch batch);

    List<TensorSpec> tensors();

    String sourceDescription();

    long producerEpochs();

    boolean isEndOfStream();

    @Override
    void close();
}
