package io.tensorsocket.spi;

import io.tensorsocket.BatchSource;

/**
 * A source that relays another producer's stream (a Flight relay's): its epochs are its upstream's, and the
 * producer it feeds asks the upstream, through {@link #upstreamBoundaries()}, to keep the offsets where its own
 * consumers joined mid-epoch, so that their epochs are exact too. Not user API.
 */
public interface RelayedSource extends BatchSource {

    /**
     * The upstream producer, asked on behalf of this relay's consumers that join mid-epoch; null where it cannot
     * keep boundaries (they roll).
     */
    UpstreamBoundaries upstreamBoundaries();
}
