package io.tensorsocket.flight;

import io.tensorsocket.ConsumerOptions;
import io.tensorsocket.spi.ConsumerEngine;
import io.tensorsocket.spi.RemoteConnector;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * Lets {@link io.tensorsocket.TensorConsumer#connect(String, ConsumerOptions)} reach {@code grpc://} and
 * {@code grpc+tls://} producers. A library call has no command-line flags, so the options of
 * {@code tensorsocket consume --token/--token-file/--trust} come from the environment:
 *
 * <pre>
 *   TENSORSOCKET_TOKEN        the server's shared token
 *   TENSORSOCKET_TOKEN_FILE   a file whose first line is the token (when TENSORSOCKET_TOKEN is unset)
 *   TENSORSOCKET_TRUST        PEM certificates to trust for grpc+tls:// (default: the system's)
 * </pre>
 *
 * For options in code, use {@link RemoteConsumer#connect(String, ConsumerOptions, RemoteOptions)}.
 */
public final class FlightConnector implements RemoteConnector {

    @Override
    public Set<String> schemes() {
        return Set.of(RemoteAddress.GRPC, RemoteAddress.GRPC_TLS);
    }

    @Override
    public ConsumerEngine connect(String uri, ConsumerOptions options) {
        return RemoteConsumer.connect(uri, options, fromEnvironment(System.getenv()));
    }

    /** The remote options the environment {@code env} sets (see the class comment). */
    public static RemoteOptions fromEnvironment(Map<String, String> env) {
        RemoteOptions o = RemoteOptions.defaults();
        String token = env.get("TENSORSOCKET_TOKEN");
        String file = env.get("TENSORSOCKET_TOKEN_FILE");
        if ((token == null || token.isBlank()) && file != null && !file.isBlank()) {
            try {
                token = Files.readString(Path.of(file)).strip();
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "cannot read TENSORSOCKET_TOKEN_FILE " + file + ": " + e.getMessage(), e);
            }
            if (token.isEmpty()) {
                throw new IllegalArgumentException("TENSORSOCKET_TOKEN_FILE " + file + " is empty");
            }
        }
        if (token != null && !token.isBlank()) {
            o = o.withToken(token);
        }
        String trust = env.get("TENSORSOCKET_TRUST");
        if (trust != null && !trust.isBlank()) {
            o = o.withTrustedCertificates(Path.of(trust));
        }
        return o;
    }
}
