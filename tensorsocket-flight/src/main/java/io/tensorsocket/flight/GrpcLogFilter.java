package io.tensorsocket.flight;

import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Keeps gRPC's routine report of a remote consumer that left in the middle of a batch out of the
 * server's output. gRPC logs it (through java.util.logging) as a WARNING with a stack trace, although
 * the server carries on and the session already logs "remote consumer ... left"; any other record passes.
 */
final class GrpcLogFilter implements Filter {
    private static final String STREAM_EXCEPTION = "io.netty.handler.codec.http2.Http2Exception$StreamException";
    // java.util.logging holds loggers weakly; this reference keeps the filter's logger configured
    private static final Logger NETTY_SERVER = Logger.getLogger("io.grpc.netty.NettyServerHandler");

    private GrpcLogFilter() {}

    /** Installs the filter once per JVM. */
    static synchronized void install() {
        if (!(NETTY_SERVER.getFilter() instanceof GrpcLogFilter)) {
            NETTY_SERVER.setFilter(new GrpcLogFilter());
        }
    }

    @Override
    @SuppressWarnings("ReferenceEquality") // log levels are constants
    public boolean isLoggable(LogRecord r) {
        Throwable t = r.getThrown();
        return !(r.getLevel() == Level.WARNING
                && t != null
                && STREAM_EXCEPTION.equals(t.getClass().getName()));
    }
}
