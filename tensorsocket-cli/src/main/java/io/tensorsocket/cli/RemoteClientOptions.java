package io.tensorsocket.cli;

import io.tensorsocket.flight.RemoteOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** How a command reaches a producer on another host ({@code grpc://} or {@code grpc+tls://} names). */
final class RemoteClientOptions {

    @Option(
            names = "--token",
            paramLabel = "TOKEN",
            description = "Shared token of a remote (grpc://) producer's server.")
    String token;

    @Option(names = "--token-file", paramLabel = "FILE", description = "Read the shared token from this file.")
    Path tokenFile;

    @Option(
            names = "--trust",
            paramLabel = "PEM",
            description = "Trust this certificate for grpc+tls:// (default: the system's).")
    Path trust;

    @Option(
            names = "--silence-timeout-s",
            defaultValue = "2",
            description =
                    "A remote server silent this long while a batch is awaited has vanished (default ${DEFAULT-VALUE}).")
    double silenceTimeoutS;

    RemoteOptions build(long epochs) throws IOException {
        RemoteOptions o =
                RemoteOptions.defaults().withEpochs(epochs).withSilenceTimeout(ServeCommand.seconds(silenceTimeoutS));
        String t = token != null
                ? token
                : tokenFile != null ? Files.readString(tokenFile).strip() : null;
        if (t != null) {
            o = o.withToken(t);
        }
        if (trust != null) {
            o = o.withTrustedCertificates(trust);
        }
        return o;
    }
}
