/**
 * What lies under {@link io.tensorsocket.TensorConsumer}'s façade, for the modules of this project that
 * provide an engine: {@link io.tensorsocket.spi.ConsumerEngine} is a consumer's behaviour on one transport,
 * {@link io.tensorsocket.spi.RemoteConnector} opens one for a URI ({@code grpc://}) so that the core depends
 * on no network library, and {@link io.tensorsocket.spi.ConsumerFacade} puts the façade over an engine opened
 * with options of its own. Exported only to those modules.
 */
package io.tensorsocket.spi;
