package io.tensorsocket.producer;

import io.tensorsocket.protocol.Message;
import io.tensorsocket.protocol.MessageChannel;
import io.tensorsocket.protocol.WireFormat;
import io.tensorsocket.rings.DescriptorRings;
import io.tensorsocket.rings.Futex;
import java.io.IOException;

/**
 * Where one consumer's stream events (its batches, epoch ends and the end) go, chosen once when it joins:
 * its socket, or the descriptor ring it was given. Everything else (WELCOME, heartbeats, errors) goes over
 * the socket either way. Used under the producer's lock.
 */
sealed interface Outlet {

    /** Sends one stream event; false if the consumer cannot be reached this way any more. */
    boolean send(Message event);

    /** The ring's number, or {@link Message.Welcome#NO_RING}. */
    int ringIndex();

    /** Stream events over the consumer's socket. */
    record Socket(MessageChannel channel) implements Outlet {
        @Override
        public boolean send(Message event) {
            try {
                channel.send(event);
                return true;
            } catch (IOException e) {
                return false; // a broken connection is dealt with by its reader
            }
        }

        @Override
        public int ringIndex() {
            return Message.Welcome.NO_RING;
        }
    }

    /** Stream events as entries of ring {@code index}; a consumer asleep on it is woken with {@code futex}. */
    record Ring(DescriptorRings.Writer writer, int ringIndex, Futex futex) implements Outlet {
        /** False once the consumer has read none of a full ring's entries: it is dropped rather than waited for. */
        @Override
        public boolean send(Message event) {
            WireFormat.encode(event, writer.frame());
            return writer.publish(futex);
        }
    }
}
