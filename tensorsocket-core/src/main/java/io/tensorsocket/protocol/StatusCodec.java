package io.tensorsocket.protocol;

import static io.tensorsocket.protocol.Fields.bool;
import static io.tensorsocket.protocol.Fields.getBool;
import static io.tensorsocket.protocol.Fields.getString;
import static io.tensorsocket.protocol.Fields.nonNegative;
import static io.tensorsocket.protocol.Fields.positive;
import static io.tensorsocket.protocol.Fields.putString;
import static io.tensorsocket.protocol.Fields.rate;
import static io.tensorsocket.protocol.Fields.share;
import static io.tensorsocket.protocol.Fields.truncate;

import io.tensorsocket.ProducerStatus;
import io.tensorsocket.ProtocolException;
import io.tensorsocket.StartMode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/** The STATUS payload, whose layout {@link WireFormat} documents with the other frames. */
final class StatusCodec {

    private StatusCodec() {}

    static void encode(ProducerStatus s, ByteBuffer b) {
        b.putLong(s.producerPid());
        putString(b, truncate(s.name()));
        putString(b, truncate(s.source()));
        b.put((byte) s.state().ordinal())
                .putInt(s.producerBatchSize())
                .putLong(s.samplesPerEpoch())
                .putLong(s.epochs())
                .putLong(s.epoch())
                .putLong(s.sample())
                .putLong(s.batchesPublished())
                .putLong(s.samplesPublished())
                .putDouble(s.samplesPerSecond())
                .putInt(s.slotCount())
                .putLong(s.slotBytes())
                .putInt(s.slotsInUse())
                .putInt(s.rubberBand())
                .putInt(s.windowBatches())
                .putLong(s.uptimeNanos())
                .putInt(s.consumersAttached())
                .putLong(s.evictions())
                .put((byte) s.midEpoch().ordinal());
        ProducerStatus.Cache cache = s.cache();
        b.putLong(cache.capacityBytes())
                .putLong(cache.bytesHeld())
                .putLong(cache.samplesHeld())
                .putLong(cache.samples())
                .putLong(cache.hits())
                .putLong(cache.loads());
        int listed = Math.min(s.consumers().size(), ProducerStatus.MAX_LISTED);
        b.putShort((short) listed);
        for (int i = 0; i < listed; i++) {
            ProducerStatus.Consumer c = s.consumers().get(i);
            b.putInt(c.id()).putLong(c.pid());
            putString(b, c.user().length() > 64 ? c.user().substring(0, 64) : c.user());
            b.putInt(c.batchSize())
                    .put(bool(c.dropLast()))
                    .put((byte) c.startMode().ordinal())
                    .putLong(c.epoch())
                    .putLong(c.position())
                    .putLong(c.lagSamples())
                    .putInt(c.batchesHeld())
                    .putLong(c.batchesSent())
                    .put(bool(c.reported()))
                    .putLong(c.samplesConsumed())
                    .putDouble(c.samplesPerSecond())
                    .putLong(c.waitNanos())
                    .putLong(c.workNanos())
                    .putLong(c.connectedNanos());
            putString(b, c.client());
            b.put(bool(c.ring()));
            putString(b, c.job());
            b.putInt(c.rank()).putInt(c.worldSize()).putDouble(c.paceShare());
            b.putInt(c.lane()).putLong(c.laneSamples()).putLong(c.streamEnd()).put(bool(c.resuming()));
        }
        b.put(bool(s.seed() != null)).putLong(s.seed() == null ? 0 : s.seed());
    }

    private static long atLeastMinusOne(long v) {
        if (v < -1) {
            throw new ProtocolException("STATUS holds a stream end of " + v);
        }
        return v;
    }

    static ProducerStatus decode(ByteBuffer p) {
        long pid = nonNegative(p.getLong());
        String name = getString(p);
        String source = getString(p);
        int state = Byte.toUnsignedInt(p.get());
        if (state >= ProducerStatus.State.values().length) {
            throw new ProtocolException("STATUS holds unknown state " + state);
        }
        int batchSize = positive(p.getInt());
        long samplesPerEpoch = nonNegative(p.getLong());
        long epochs = nonNegative(p.getLong());
        long epoch = nonNegative(p.getLong());
        long sample = nonNegative(p.getLong());
        long batches = nonNegative(p.getLong());
        long samples = nonNegative(p.getLong());
        double rate = rate(p.getDouble());
        int slotCount = positive(p.getInt());
        long slotBytes = nonNegative(p.getLong());
        int inUse = nonNegative(p.getInt());
        int rubberBand = nonNegative(p.getInt());
        int window = nonNegative(p.getInt());
        long uptime = nonNegative(p.getLong());
        int attached = nonNegative(p.getInt());
        long evictions = nonNegative(p.getLong());
        int midEpoch = Byte.toUnsignedInt(p.get());
        ProducerStatus.Cache cache = new ProducerStatus.Cache(
                nonNegative(p.getLong()),
                nonNegative(p.getLong()),
                nonNegative(p.getLong()),
                nonNegative(p.getLong()),
                nonNegative(p.getLong()),
                nonNegative(p.getLong()));
        int listed = Short.toUnsignedInt(p.getShort());
        if (cache.bytesHeld() > cache.capacityBytes() || cache.samplesHeld() > cache.samples()) {
            throw new ProtocolException("STATUS holds a cache holding more than it can");
        }
        if (listed > ProducerStatus.MAX_LISTED
                || listed > attached
                || inUse > slotCount
                || midEpoch < 1
                || midEpoch > 2) {
            throw new ProtocolException("STATUS holds an invalid value");
        }
        List<ProducerStatus.Consumer> consumers = new ArrayList<>(listed);
        for (int i = 0; i < listed; i++) {
            int id = nonNegative(p.getInt());
            long cpid = nonNegative(p.getLong());
            String user = getString(p);
            int cb = positive(p.getInt());
            boolean dropLast = getBool(p);
            int mode = Byte.toUnsignedInt(p.get());
            if (mode > 2) {
                throw new ProtocolException("STATUS holds start mode " + mode);
            }
            consumers.add(new ProducerStatus.Consumer(
                    id,
                    cpid,
                    user,
                    cb,
                    dropLast,
                    StartMode.values()[mode],
                    nonNegative(p.getLong()),
                    nonNegative(p.getLong()),
                    nonNegative(p.getLong()),
                    nonNegative(p.getInt()),
                    nonNegative(p.getLong()),
                    getBool(p),
                    nonNegative(p.getLong()),
                    rate(p.getDouble()),
                    nonNegative(p.getLong()),
                    nonNegative(p.getLong()),
                    nonNegative(p.getLong()),
                    getString(p),
                    getBool(p),
                    getString(p),
                    nonNegative(p.getInt()),
                    positive(p.getInt()),
                    share(p.getDouble()),
                    nonNegative(p.getInt()),
                    nonNegative(p.getLong()),
                    atLeastMinusOne(p.getLong()),
                    getBool(p)));
        }
        boolean seeded = getBool(p);
        long seed = p.getLong();
        return new ProducerStatus(
                pid,
                name,
                source,
                ProducerStatus.State.values()[state],
                batchSize,
                samplesPerEpoch,
                epochs,
                epoch,
                sample,
                batches,
                samples,
                rate,
                slotCount,
                slotBytes,
                inUse,
                rubberBand,
                window,
                uptime,
                attached,
                evictions,
                StartMode.values()[midEpoch],
                cache,
                consumers,
                seeded ? seed : null);
    }
}
