/**
 * The stream model: every rule about positions in the producer's stream, with no sockets, locks,
 * threads or clocks, so that each rule is written once and can be tested directly.
 *
 * <ul>
 *   <li>{@link io.tensorsocket.stream.StreamGeometry}: stream positions ({@code epoch × samplesPerEpoch + sample})
 *       and the slot budget a consumer batch size needs.</li>
 *   <li>{@link io.tensorsocket.stream.ProducerStream}: where the next published batch lies, which batch
 *       sizes a source may publish, and what the rubber band still holds.</li>
 *   <li>{@link io.tensorsocket.stream.JoinRule}: where a joining consumer starts (an epoch start, with the
 *       retained batches replayed, or rolling).</li>
 *   <li>{@link io.tensorsocket.stream.ConsumerStream}: how one consumer regroups producer batches into its
 *       own batches, which slots each of its batches spans, and which producer batches it may release.</li>
 *   <li>{@link io.tensorsocket.stream.RankShare}: which samples of each epoch a rank of a data-parallel job
 *       takes.</li>
 * </ul>
 *
 * <p>Both the producer and the consumer drive these classes from their own threads under their own
 * locks; another transport (a remote consumer, an external process filling slots) reuses them the same
 * way. The Python client ports this package ({@code tensorsocket_client/stream.py}); the scenarios in
 * {@code docs/test-vectors/scenarios.txt} keep the two equal.
 */
package io.tensorsocket.stream;
