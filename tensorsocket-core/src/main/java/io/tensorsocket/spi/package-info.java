/**
 * Extension points of the core that other modules implement: {@link io.tensorsocket.spi.RemoteConnector}
 * lets {@link io.tensorsocket.TensorConsumer#connect(String, io.tensorsocket.ConsumerOptions)} reach
 * producers on other hosts without the core depending on any network library.
 */
package io.tensorsocket.spi;
