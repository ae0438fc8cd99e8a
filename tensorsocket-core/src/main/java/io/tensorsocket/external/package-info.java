/**
 * A producer whose batches another process writes: see {@link io.tensorsocket.external.ExternalSource}.
 */
package io.tensorsocket.external;
