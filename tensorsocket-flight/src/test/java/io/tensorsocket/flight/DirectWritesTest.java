package io.tensorsocket.flight;

import static org.junit.jupiter.api.Assertions.*;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

/** {@link DirectWrites}: what reaches the socket is the same bytes, direct, from the same memory where it was direct. */
class DirectWritesTest {

    /** A message shaped as Flight writes one: a small heap header, then a direct body. */
    private static CompositeByteBuf message(ByteBuf body) {
        ByteBuf header = Unpooled.buffer(7).writeBytes(new byte[] {1, 2, 3, 4, 5, 6, 7});
        CompositeByteBuf m = new CompositeByteBuf(ByteBufAllocator.DEFAULT, true, 16);
        m.addComponents(true, header, body);
        return m;
    }

    private static ByteBuf directBody(int n) {
        ByteBuf body = Unpooled.directBuffer(n);
        for (int i = 0; i < n; i++) {
            body.writeByte(i * 31);
        }
        return body;
    }

    @Test
    void aFrameOfHeapAndDirectPartsGoesOutDirectWithItsBytesAndItsBodyUncopied() {
        ByteBuf body = directBody(40_000);
        CompositeByteBuf m = message(body);
        assertFalse(m.isDirect(), "Netty would copy such a message whole");
        ByteBuf frame = m.retainedSlice(3, 20_000); // a DATA frame: the header's end and part of the body
        byte[] expected = new byte[20_000];
        frame.getBytes(frame.readerIndex(), expected);

        EmbeddedChannel ch = new EmbeddedChannel(DirectWrites.INSTANCE);
        assertTrue(ch.writeOutbound(frame));
        ByteBuf out = ch.readOutbound();
        assertTrue(out.isDirect(), "every part is direct");
        byte[] got = new byte[out.readableBytes()];
        out.getBytes(out.readerIndex(), got);
        assertArrayEquals(expected, got);

        body.setByte(1000, 99); // the body is shown, not copied: a change shows through
        assertEquals(99, out.getByte(out.readerIndex() + 1000 - 3 + 7));

        assertEquals(2, m.refCnt(), "the frame's reference is held by what was written");
        out.release();
        assertEquals(1, m.refCnt(), "and released with it");
        m.release();
        assertEquals(0, body.refCnt());
        assertFalse(ch.finish());
    }

    @Test
    void directAndNonBufferMessagesPassUnchanged() {
        EmbeddedChannel ch = new EmbeddedChannel(DirectWrites.INSTANCE);
        ByteBuf direct = directBody(100);
        ch.writeOutbound(direct, "not a buffer");
        assertSame(direct, ch.readOutbound());
        assertEquals("not a buffer", ch.readOutbound());
        direct.release();
    }

    @Test
    void aWholeHeapMessageIsCopiedIntoDirectMemory() {
        ByteBuf heap = Unpooled.wrappedBuffer(new byte[] {9, 8, 7});
        ByteBuf view = DirectWrites.directView(ByteBufAllocator.DEFAULT, heap);
        assertTrue(view.isDirect());
        assertEquals(9, view.getByte(0));
        assertEquals(7, view.getByte(2));
        view.release();
        assertEquals(0, heap.refCnt());
    }

    @Test
    void aViewOfEmptyPartsIsEmpty() {
        ByteBuf empty = message(Unpooled.directBuffer(0)).slice(7, 0).retain();
        ByteBuf view = DirectWrites.directView(ByteBufAllocator.DEFAULT, empty);
        assertEquals(0, view.readableBytes());
        view.release();
    }
}
