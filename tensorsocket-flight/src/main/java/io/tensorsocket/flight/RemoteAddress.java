package io.tensorsocket.flight;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import org.apache.arrow.flight.Location;

/**
 * Where a remote producer is: {@code grpc://HOST:PORT/NAME} (plain gRPC) or {@code grpc+tls://HOST:PORT/NAME}
 * (gRPC over TLS). {@code HOST} may be a name, an IPv4 address or a bracketed IPv6 address.
 *
 * @param tls  whether the connection uses TLS
 * @param host server host
 * @param port server port
 * @param name the producer's name on the serving host
 */
public record RemoteAddress(boolean tls, String host, int port, String name) {

    /** Scheme of a plain gRPC address. */
    public static final String GRPC = "grpc";
    /** Scheme of a gRPC-over-TLS address. */
    public static final String GRPC_TLS = "grpc+tls";

    /** Whether {@code text} is a remote address rather than a local producer name. */
    public static boolean isRemote(String text) {
        String t = text.toLowerCase(Locale.ROOT);
        return t.startsWith(GRPC + "://") || t.startsWith(GRPC_TLS + "://");
    }

    /**
     * Parses {@code grpc://HOST:PORT/NAME} or {@code grpc+tls://HOST:PORT/NAME}.
     *
     * @throws IllegalArgumentException with what is wrong and the expected form
     */
    public static RemoteAddress parse(String text) {
        String form = " (expected grpc://HOST:PORT/NAME or grpc+tls://HOST:PORT/NAME)";
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("'" + text + "' is not a valid address: " + e.getReason() + form, e);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals(GRPC) && !scheme.equals(GRPC_TLS)) {
            throw new IllegalArgumentException("'" + text + "' has scheme '" + scheme + "'" + form);
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("'" + text + "' names no HOST:PORT" + form);
        }
        String path = uri.getPath() == null ? "" : uri.getPath();
        String name = path.startsWith("/") ? path.substring(1) : path;
        if (name.isEmpty() || name.contains("/")) {
            throw new IllegalArgumentException("'" + text + "' names no producer after HOST:PORT/" + form);
        }
        if (uri.getQuery() != null || uri.getFragment() != null) {
            throw new IllegalArgumentException(
                    "'" + text + "' carries a query or fragment; pass options separately" + form);
        }
        String host = uri.getHost();
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new RemoteAddress(scheme.equals(GRPC_TLS), host, uri.getPort(), name);
    }

    /** The Flight location of the server. */
    public Location location() {
        return tls ? Location.forGrpcTls(host, port) : Location.forGrpcInsecure(host, port);
    }

    @Override
    public String toString() {
        String h = host.contains(":") ? "[" + host + "]" : host;
        return (tls ? GRPC_TLS : GRPC) + "://" + h + ":" + port + "/" + name;
    }
}
