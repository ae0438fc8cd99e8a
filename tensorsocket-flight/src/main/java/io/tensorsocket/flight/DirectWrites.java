package io.tensorsocket.flight;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import java.nio.ByteBuffer;

/**
 * Lets a connection write each outgoing buffer from where its bytes are, copying only the parts that live on the
 * Java heap.
 *
 * <p>Netty's socket channels write only from native memory: a buffer that is not wholly direct is copied whole
 * into a new direct buffer first. Flight's zero-copy write sends a record batch as one composite buffer whose first
 * part, the message header, is a small heap buffer, and its bodies, the batch's memory, are direct; so every HTTP/2
 * DATA frame cut from it counted as not direct and was copied again on its way to the socket (16 KiB at a time, a
 * 38.5 MB batch in 2,400 pieces). Placed next to the socket, this handler hands such a buffer on as a composite of
 * its direct parts as they are and copies of its heap parts; the original stays alive until that composite is
 * written and released.
 *
 * <pre>
 *  written:   [ header (heap) | body ............ (direct) ]        a DATA frame's slice of Flight's message
 *  passed on: [ copy (direct) | body ............ (direct, same memory) ]  + a reference to the original,
 *                                                                           released with the composite
 * </pre>
 */
@ChannelHandler.Sharable
final class DirectWrites extends ChannelOutboundHandlerAdapter {
    static final DirectWrites INSTANCE = new DirectWrites();

    private DirectWrites() {}

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf b && !b.isDirect() && !b.hasMemoryAddress() && b.nioBufferCount() > 0) {
            msg = directView(ctx.alloc(), b);
        }
        ctx.write(msg, promise);
    }

    /** {@code b}'s readable bytes as a composite of direct buffers; it takes over the caller's reference to b. */
    static ByteBuf directView(ByteBufAllocator alloc, ByteBuf b) {
        ByteBuffer[] parts = b.nioBuffers();
        Holding view = new Holding(alloc, parts.length, b);
        try {
            for (ByteBuffer p : parts) {
                if (!p.hasRemaining()) {
                    continue;
                }
                ByteBuf part = p.isDirect()
                        ? Unpooled.wrappedBuffer(p)
                        : alloc.directBuffer(p.remaining()).writeBytes(p);
                view.addComponent(true, part);
            }
            return view;
        } catch (RuntimeException e) {
            view.release();
            throw e;
        }
    }

    /** A composite that holds the buffer whose memory its wrapped parts show, releasing it with itself. */
    private static final class Holding extends CompositeByteBuf {
        private final ByteBuf original;

        Holding(ByteBufAllocator alloc, int parts, ByteBuf original) {
            super(alloc, true, Math.max(parts, 2));
            this.original = original;
        }

        @Override
        protected void deallocate() {
            try {
                super.deallocate();
            } finally {
                original.release();
            }
        }
    }
}
