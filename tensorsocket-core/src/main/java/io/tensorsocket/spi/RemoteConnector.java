package io.tensorsocket.spi;

import io.tensorsocket.ConsumerOptions;
import java.util.Locale;
import java.util.ServiceLoader;
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

    /**
     * The connector on the class path that reaches {@code uri}'s scheme.
     *
     * @throws IllegalStateException    for {@code grpc://} or {@code grpc+tls://} without {@code tensorsocket-flight}
     * @throws IllegalArgumentException for a scheme no module handles
     */
    static RemoteConnector forUri(String uri) {
        String scheme = uri.substring(0, uri.indexOf("://")).toLowerCase(Locale.ROOT);
        for (RemoteConnector c : ServiceLoader.load(RemoteConnector.class, RemoteConnector.class.getClassLoader())) {
            if (c.schemes().contains(scheme)) {
                return c;
            }
        }
        if (scheme.equals("grpc") || scheme.equals("grpc+tls")) {
            throw new IllegalStateException(
                    "'" + uri + "' is a remote producer, and reaching one needs the module"
                            + " tensorsocket-flight (io.tensorsocket:tensorsocket-flight) on the class path; add it as a dependency");
        }
        throw new IllegalArgumentException(
                "'" + uri + "' has scheme '" + scheme + "', which no module on the class path"
                        + " handles; a producer is named NAME (this host) or grpc://HOST:PORT/NAME (another host, with"
                        + " tensorsocket-flight)");
    }
}
