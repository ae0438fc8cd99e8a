package io.tensorsocket.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.tensorsocket.ProducerStatus;
import io.tensorsocket.TensorProducer;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The numbers {@code tensorsocket status} shows, as Micrometer meters of one producer. They read one
 * {@link ProducerStatus} snapshot, taken by {@link #refresh()} before each scrape, so every value of a scrape
 * comes from the same instant. Per-consumer meters carry a {@code consumer} (id) and {@code pid} tag and
 * disappear when the consumer leaves.
 */
public final class ProducerMeters {
    private final TensorProducer producer;
    private final MultiGauge consumerLag;
    private final MultiGauge consumerWait;
    private final MultiGauge consumerRate;
    private final MultiGauge consumerHeld;
    private volatile ProducerStatus snapshot;

    /** Registers the meters of {@code producer} in {@code registry}, tagged with the producer's name. */
    public ProducerMeters(TensorProducer producer, MeterRegistry registry) {
        this.producer = producer;
        this.snapshot = producer.status();
        Tags tags = Tags.of("producer", producer.name());
        FunctionCounter.builder("tensorsocket.batches.published", this, m -> m.snapshot.batchesPublished())
                .description("Batches written to the arena")
                .tags(tags)
                .register(registry);
        FunctionCounter.builder("tensorsocket.samples.published", this, m -> m.snapshot.samplesPublished())
                .description("Samples written to the arena")
                .tags(tags)
                .register(registry);
        FunctionCounter.builder("tensorsocket.loader.errors", producer, TensorProducer::loaderErrors)
                .description("Times the loader threw (each stops the producer)")
                .tags(tags)
                .register(registry);
        FunctionCounter.builder("tensorsocket.consumers.evicted", this, m -> m.snapshot.evictions())
                .description("Consumers disconnected for holding a batch past the stall timeout")
                .tags(tags)
                .register(registry);
        gauge(
                registry,
                "tensorsocket.samples.per.second",
                "Samples published per second, over the last seconds",
                tags,
                ProducerStatus::samplesPerSecond);
        gauge(
                registry,
                "tensorsocket.batches.per.second",
                "Batches published per second, over the last seconds",
                tags,
                s -> s.producerBatchSize() == 0 ? 0 : s.samplesPerSecond() / s.producerBatchSize());
        gauge(
                registry,
                "tensorsocket.slots.in.use",
                "Arena slots holding a batch not yet released by everyone",
                tags,
                ProducerStatus::slotsInUse);
        gauge(registry, "tensorsocket.slots", "Arena slots in all", tags, ProducerStatus::slotCount);
        gauge(
                registry,
                "tensorsocket.consumers.attached",
                "Consumers attached",
                tags,
                ProducerStatus::consumersAttached);
        gauge(registry, "tensorsocket.epoch", "The producer's current epoch", tags, ProducerStatus::epoch);
        gauge(
                registry,
                "tensorsocket.epoch.progress",
                "Fraction of the current epoch published (0 to 1)",
                tags,
                ProducerStatus::epochProgress);
        gauge(
                registry,
                "tensorsocket.cache.bytes",
                "Bytes of decoded samples the source's cache keeps (0 without a cache)",
                tags,
                s -> s.cache().bytesHeld());
        gauge(
                registry,
                "tensorsocket.cache.samples",
                "Samples the source's decoded-sample cache keeps (0 without a cache)",
                tags,
                s -> s.cache().samplesHeld());
        FunctionCounter.builder(
                        "tensorsocket.cache.hits", this, m -> m.snapshot.cache().hits())
                .description("Sample loads that found the sample decoded in the cache")
                .tags(tags)
                .register(registry);
        FunctionCounter.builder(
                        "tensorsocket.cache.loads",
                        this,
                        m -> m.snapshot.cache().loads())
                .description("Sample loads that decoded the sample (the cache did not hold it)")
                .tags(tags)
                .register(registry);
        gauge(
                registry,
                "tensorsocket.uptime.seconds",
                "Seconds since the producer started",
                tags,
                s -> s.uptimeNanos() / 1e9);
        consumerLag = MultiGauge.builder("tensorsocket.consumer.lag.samples")
                .description("Samples published beyond what the consumer has released")
                .tags(tags)
                .register(registry);
        consumerWait = MultiGauge.builder("tensorsocket.consumer.wait.ratio")
                .description("Share of the consumer's time spent waiting for data (0 to 1), as it reports")
                .tags(tags)
                .register(registry);
        consumerRate = MultiGauge.builder("tensorsocket.consumer.samples.per.second")
                .description("Samples per second the consumer reports reading")
                .tags(tags)
                .register(registry);
        consumerHeld = MultiGauge.builder("tensorsocket.consumer.batches.held")
                .description("Batches the consumer holds unreleased")
                .tags(tags)
                .register(registry);
        registerConsumers();
    }

    private void gauge(
            MeterRegistry registry, String name, String help, Tags tags, ToDoubleFunction<ProducerStatus> f) {
        Gauge.builder(name, this, m -> f.applyAsDouble(m.snapshot))
                .description(help)
                .tags(tags)
                .register(registry);
    }

    /** Takes a fresh status snapshot and updates the per-consumer meters; call before each scrape. */
    public void refresh() {
        snapshot = producer.status();
        registerConsumers();
    }

    private void registerConsumers() {
        List<ProducerStatus.Consumer> cs = snapshot.consumers();
        consumerLag.register(rows(cs, ProducerStatus.Consumer::lagSamples), true);
        // A consumer that has not reported yet has no wait share; it is left out rather than shown as NaN.
        consumerWait.register(
                rows(
                        cs.stream().filter(ProducerStatus.Consumer::reported).toList(),
                        ProducerStatus.Consumer::waitFraction),
                true);
        consumerRate.register(
                rows(
                        cs.stream().filter(ProducerStatus.Consumer::reported).toList(),
                        ProducerStatus.Consumer::samplesPerSecond),
                true);
        consumerHeld.register(rows(cs, ProducerStatus.Consumer::batchesHeld), true);
    }

    private static List<MultiGauge.Row<?>> rows(
            List<ProducerStatus.Consumer> cs, ToDoubleFunction<ProducerStatus.Consumer> f) {
        return cs.stream()
                .<MultiGauge.Row<?>>map(c -> MultiGauge.Row.of(
                        Tags.of("consumer", Integer.toString(c.id()), "pid", Long.toString(c.pid())),
                        f.applyAsDouble(c)))
                .toList();
    }
}
