"""What every consumer does whatever its transport (shared memory here, Arrow Flight from another host): the
checks of its arguments, the current batch released when the next is asked for, refusal once closed, the
context manager, and the time its iterator spent waiting."""

import os

from .errors import TensorSocketError

MAX_JOB = 100  # longest job name


def job_rank(job, rank, world_size):
    """(job, rank, world_size) of a rank of a data-parallel job, rank and world size defaulting to torchrun's RANK and
    WORLD_SIZE; None for a consumer that names no job. ValueError for what cannot be a rank."""
    if job is None:
        if rank is not None or world_size is not None:
            raise ValueError("rank and world_size place a consumer in a job: name it with job=")
        return None
    if not isinstance(job, str) or not job.strip() or len(job) > MAX_JOB:
        raise ValueError("a job name has 1 to %d characters, not %r" % (MAX_JOB, job))
    rank = _from_environment(rank, "RANK", "rank")
    world_size = _from_environment(world_size, "WORLD_SIZE", "world_size")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError("rank %d of a world of %d is invalid: ranks are numbered 0 to world size - 1 (torchrun's "
                         "RANK and WORLD_SIZE)" % (rank, world_size))
    return job, rank, world_size


def _from_environment(value, variable, argument):
    if value is not None:
        if int(value) != value:
            raise ValueError("%s must be an integer, got %r" % (argument, value))
        return int(value)
    v = os.environ.get(variable, "").strip()
    if not v:
        raise ValueError("job= needs %s= (or %s in the environment, as torchrun sets it)" % (argument, variable))
    try:
        return int(v)
    except ValueError:
        raise ValueError("%s=%r in the environment is not a number; give %s= instead" % (variable, v, argument)) from None


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
