package io.tensorsocket.flight;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * A remote consumer's connection: it keeps each piece of a message where it was read, and notes when bytes last
 * arrived.
 *
 * <p>gRPC's HTTP/2 decoder merges every read into one accumulating buffer whenever a frame spans two reads, which
 * is nearly always; while gRPC still holds frames of the message being received, each merge copies the whole
 * accumulated read into a new buffer: once more per byte received. Here the decoder composes reads instead
 * (Netty's composite cumulator: a frame that spans two reads is a view of both). Reads keep Netty's size (up to
 * 64 KiB): larger ones, held until their message is whole, cost more in fresh memory than they save in calls.
 */
final class ReceivingChannel extends NioSocketChannel {
    private final LongConsumer onBytes;
    private boolean composing;

    /** @param onBytes told {@link System#nanoTime()} whenever bytes arrive */
    ReceivingChannel(LongConsumer onBytes) {
        this.onBytes = onBytes;
    }

    @Override
    protected int doReadBytes(ByteBuf buf) throws Exception {
        if (!composing) {
            composeReads();
        }
        int n = super.doReadBytes(buf);
        if (n > 0) {
            onBytes.accept(System.nanoTime());
        }
        return n;
    }

    /** Has gRPC's HTTP/2 decoder, once it is in the pipeline, compose reads rather than merge them. */
    private void composeReads() {
        Http2ConnectionHandler h = http2Handler(pipeline());
        if (h != null) {
            h.setCumulator(ByteToMessageDecoder.COMPOSITE_CUMULATOR);
            composing = true;
        }
    }

    /** gRPC's HTTP/2 handler in a connection's pipeline (client or server), or null before gRPC has added it. */
    static Http2ConnectionHandler http2Handler(ChannelPipeline pipeline) {
        for (Map.Entry<String, ChannelHandler> e : pipeline) {
            if (e.getValue() instanceof Http2ConnectionHandler h) {
                return h;
            }
        }
        return null;
    }
}
