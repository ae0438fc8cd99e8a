"""What every consumer does whatever its transport (shared memory here, Arrow Flight from another host): the
checks of its arguments, the current batch released when the next is asked for, refusal once closed, the
context manager, and the time its iterator spent waiting."""

from .errors import TensorSocketError


def checked_batch_size(batch_size) -> int:
    if batch_size is None or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError("batch_size must be a positive integer, got %r" % (batch_size,))
    return int(batch_size)


class ConsumerBase:
    """The shared lifecycle; a consumer sets ``_closed``, ``_current`` and ``_wait_ns`` and says how it is named."""

    _closed = True
    _current = None
    _wait_ns = 0

    def _label(self) -> str:
        """How messages name the producer ("producer 'x'", or its address)."""
        raise NotImplementedError

    def _close_current(self):
        b, self._current = self._current, None
        if b is not None:
            b.release()

    def _check_open(self):
        if self._closed:
            raise TensorSocketError("this consumer of %s is closed" % self._label())

    @property
    def wait_seconds(self) -> float:
        """Time the iterator spent waiting for data since the consumer connected."""
        return self._wait_ns / 1e9

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<%s of %s, batch size %d%s>" % (type(self).__name__, self._label(), self.batch_size,
                                               ", closed" if self._closed else "")
