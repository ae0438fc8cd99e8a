package io.tensorsocket.cli;

import io.tensorsocket.TensorProducer;
import io.tensorsocket.flight.FlightServe;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code serve --flight HOST:PORT ...}: also serve the producer to other hosts over Arrow Flight. */
final class FlightOptions {

    @Option(
            names = "--flight",
            paramLabel = "HOST:PORT",
            description = "Also serve remote consumers over Arrow Flight here (e.g. 127.0.0.1:8815; any address"
                    + " but loopback needs a token).")
    String flight;

    @Option(names = "--flight-token", paramLabel = "TOKEN", description = "Shared token remote consumers must present.")
    String token;

    @Option(names = "--flight-token-file", paramLabel = "FILE", description = "Read the shared token from this file.")
    Path tokenFile;

    @Option(
            names = "--flight-tls-cert",
            paramLabel = "PEM",
            description = "Serve TLS with this certificate chain (PEM).")
    Path tlsCert;

    @Option(names = "--flight-tls-key", paramLabel = "PEM", description = "The TLS private key (PEM, PKCS#8).")
    Path tlsKey;

    /** Starts the Flight server for {@code producer}, or returns null when {@code --flight} was not given. */
    FlightServe start(TensorProducer producer) throws Exception {
        if (flight == null) {
            if (token != null || tokenFile != null || tlsCert != null || tlsKey != null) {
                throw new IllegalArgumentException("--flight-token/--flight-tls-* need --flight HOST:PORT");
            }
            return null;
        }
        int colon = flight.lastIndexOf(':');
        if (colon <= 0 || colon == flight.length() - 1) {
            throw new IllegalArgumentException("--flight wants HOST:PORT (e.g. 127.0.0.1:8815), not '" + flight + "'");
        }
        String host = flight.substring(0, colon).replace("[", "").replace("]", "");
        int port;
        try {
            port = Integer.parseInt(flight.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "--flight port '" + flight.substring(colon + 1) + "' is not a number", e);
        }
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("TLS needs both --flight-tls-cert and --flight-tls-key");
        }
        FlightServe.Builder b =
                FlightServe.builder().producer(producer).host(host).port(port).token(token);
        if (tokenFile != null) {
            b.tokenFile(tokenFile);
        }
        if (tlsCert != null) {
            b.tls(tlsCert, tlsKey);
        }
        return b.build().start();
    }
}
