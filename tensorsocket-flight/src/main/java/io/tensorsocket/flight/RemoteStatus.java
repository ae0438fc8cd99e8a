package io.tensorsocket.flight;

import io.tensorsocket.PermissionDeniedException;
import io.tensorsocket.ProducerGoneException;
import io.tensorsocket.ProducerNotFoundException;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.TensorSocketException;
import io.tensorsocket.TensorSocketTimeoutException;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.WireFormat;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallOptions;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.auth2.BearerCredentialWriter;
import org.apache.arrow.flight.grpc.CredentialCallOption;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * Asks a {@link FlightServe} for its producer's status (the {@value FlightServe#STATUS_ACTION} action):
 * the same snapshot {@link ProducerStatus#query} gives on the serving host.
 */
public final class RemoteStatus {
    private RemoteStatus() {}

    /**
     * Queries the producer at {@code uri} ({@code grpc://HOST:PORT/NAME} or {@code grpc+tls://...}).
     *
     * @throws ProducerNotFoundException if the server serves another producer
     * @throws ProducerGoneException if the server cannot be reached
     * @throws PermissionDeniedException if the token is missing or wrong
     * @throws TensorSocketTimeoutException if no answer comes within {@code timeout}
     */
    public static ProducerStatus query(String uri, RemoteOptions remote, Duration timeout) {
        RemoteAddress address = RemoteAddress.parse(uri);
        try (BufferAllocator allocator = new RootAllocator();
                FlightClient client = client(allocator, address, remote)) {
            List<CallOption> calls = new ArrayList<>();
            calls.add(CallOptions.timeout(timeout.toMillis(), TimeUnit.MILLISECONDS));
            if (remote.token() != null) {
                calls.add(new CredentialCallOption(new BearerCredentialWriter(remote.token())));
            }
            Iterator<Result> results =
                    client.doAction(new Action(FlightServe.STATUS_ACTION), calls.toArray(CallOption[]::new));
            if (!results.hasNext()) {
                throw new ProtocolException("server " + address + " answered the status action with nothing");
            }
            ProducerStatus status = decode(address, results.next().getBody());
            while (results.hasNext()) {
                results.next();
            }
            if (!status.name().equals(address.name())) {
                throw new ProducerNotFoundException(
                        "server " + address + " serves producer '" + status.name() + "', not '" + address.name() + "'");
            }
            return status;
        } catch (FlightRuntimeException e) {
            throw translate(address, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TensorSocketTimeoutException("interrupted while asking " + address + " for its status");
        }
    }

    private static ProducerStatus decode(RemoteAddress address, byte[] body) {
        try {
            ByteBuffer b = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
            WireFormat.Header h = WireFormat.decodeHeader(b);
            if (h.payloadBytes() != b.remaining()) {
                throw new ProtocolException(
                        "frame announces " + h.payloadBytes() + " payload bytes but carries " + b.remaining());
            }
            if (!(WireFormat.decodePayload(h.type(), b.slice().order(ByteOrder.LITTLE_ENDIAN))
                    instanceof Message.Status s)) {
                throw new ProtocolException("the answer is not a STATUS frame");
            }
            return s.status();
        } catch (ProtocolException | BufferUnderflowException e) {
            throw new ProtocolException(
                    "server " + address + " answered the status action with a bad frame: " + e.getMessage());
        }
    }

    private static FlightClient client(BufferAllocator allocator, RemoteAddress address, RemoteOptions remote) {
        FlightClient.Builder b = FlightClient.builder(allocator, address.location());
        if (address.tls()) {
            b.useTls();
            if (remote.trustedCertificates() != null) {
                try {
                    b.trustedCertificates(new ByteArrayInputStream(Files.readAllBytes(remote.trustedCertificates())));
                } catch (IOException e) {
                    throw new IllegalArgumentException(
                            "cannot read trusted certificates " + remote.trustedCertificates() + ": " + e.getMessage(),
                            e);
                }
            }
        }
        return b.build();
    }

    private static TensorSocketException translate(RemoteAddress address, FlightRuntimeException e) {
        String where = "server " + address;
        String msg =
                e.status().description() == null ? e.getMessage() : e.status().description();
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != e && root.getMessage() != null && !msg.contains(root.getMessage())) {
            msg += " (" + root.getMessage() + ")";
        }
        return switch (e.status().code()) {
            case UNAUTHENTICATED, UNAUTHORIZED ->
                new PermissionDeniedException(where + " refused the status request: " + msg, e);
            case TIMED_OUT ->
                new TensorSocketTimeoutException(where + " did not answer the status request in time: " + msg, e);
            case UNAVAILABLE ->
                new ProducerGoneException(
                        where + " is unreachable or its producer is gone: " + msg
                                + " (is `serve --flight` running there, and the address and TLS setting right?)",
                        e);
            default ->
                new ProtocolException(
                        where + " failed the status request: " + e.status().code() + ": " + msg);
        };
    }
}
