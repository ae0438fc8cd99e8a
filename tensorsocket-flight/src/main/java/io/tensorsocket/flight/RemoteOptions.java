package io.tensorsocket.flight;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How a {@link RemoteConsumer} reaches its server, beside the {@link io.tensorsocket.ConsumerOptions}
 * every consumer has.
 *
 * @param token               the server's shared token, or null where it needs none
 * @param trustedCertificates PEM certificates to trust for {@code grpc+tls://} (null: the system's)
 * @param epochs              epochs to ask the server for; 0 streams until the producer's stream ends
 * @param silenceTimeout      a server silent this long while a batch is awaited counts as vanished
 */
public record RemoteOptions(String token, Path trustedCertificates, long epochs, Duration silenceTimeout) {

    /** No token, the system's trust store, every epoch, two seconds of silence. */
    public static RemoteOptions defaults() {
        return new RemoteOptions(null, null, 0, Duration.ofSeconds(2));
    }

    public RemoteOptions withToken(String t) {
        return new RemoteOptions(t, trustedCertificates, epochs, silenceTimeout);
    }

    public RemoteOptions withTrustedCertificates(Path pem) {
        return new RemoteOptions(token, pem, epochs, silenceTimeout);
    }

    public RemoteOptions withEpochs(long e) {
        return new RemoteOptions(token, trustedCertificates, e, silenceTimeout);
    }

    public RemoteOptions withSilenceTimeout(Duration d) {
        return new RemoteOptions(token, trustedCertificates, epochs, d);
    }
}
