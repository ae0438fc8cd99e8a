package io.tensorsocket.consumer;

import io.tensorsocket.StartMode;
import io.tensorsocket.protocol.Message;
import io.tensorsocket.stream.ConsumerStream;

/**
 * What a consumer is told where a finite stream ends for it: that it asked for an epoch past its last (the ordinary
 * end, naming how many it got), or that its last epoch came short (the producer could not complete it).
 */
final class StreamEnd {
    private StreamEnd() {}

    /** The stream has no further epoch for this consumer, which got {@code got} epochs of it. */
    static String noMoreEpochs(String producer, Message.Welcome w, long got) {
        return "the stream of producer '" + producer + "' has ended"
                + (w.epochs() > 0 ? " (its " + w.epochs() + " epochs)" : "") + ": this consumer got " + got
                + (got == 1 ? " epoch" : " epochs") + " of it" + joined(w)
                + " and no further epoch comes; iterate while"
                + " !isEndOfStream() (Python: not is_end_of_stream()), or run the producer for more epochs";
    }

    /** The stream ended {@code missing} samples into this consumer's current epoch. */
    static String shortEpoch(String producer, Message.Welcome w, ConsumerStream stream, long missing) {
        return "the stream of producer '" + producer + "' ended " + missing + " samples short of this consumer's"
                + " epoch " + stream.epoch() + joined(w) + ": "
                + (w.startMode() == StartMode.ROLLING
                        ? "its source fixes its own order, so the samples of the epoch the consumer joined late for"
                                + " cannot be loaded again"
                        : "the producer could not load the rest of the epoch again by index")
                + "; start consumers together with the producer (within its start grace) for whole epochs";
    }

    private static String joined(Message.Welcome w) {
        return w.startSample() == 0
                ? ""
                : " (it joined at sample " + w.startSample() + " of epoch " + w.startEpoch() + ")";
    }
}
