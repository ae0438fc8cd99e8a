package io.tensorsocket.spi;

import io.tensorsocket.ConsumerOptions;
import java.util.Set;

/**
 * Reaches producers on other hosts for {@link io.tensorsocket.TensorConsumer#connect(String,
 * io.tensorsocket.ConsumerOptions)} when the name is a URI ({@code grpc://HOST:PORT/NAME}). Implementations
 * are found with {@link java.util.ServiceLoader}, so the core needs no network library: the
 * {@code tensorsocket-flight} module provides the one for {@code grpc://} and {@code grpc+tls://}.
 */
public interface RemoteConnector {

    /** The URI schemes this connector reaches, lower case (e.g. {@code grpc}, {@code grpc+tls}). */
    Set<String> schemes();

    /**
     * Connects a consumer to the producer at {@code uri}; tokens and trusted certificates come from the
     * connector's own configuration (for Flight: environment variables, see its documentation).
     *
     * @throws io.tensorsocket.TensorSocketException as a local connect would (not found, refused, gone)
     * @throws IllegalArgumentException if {@code uri} is malformed
     */
    ConsumerEngine connect(String uri, ConsumerOptions options);
}
