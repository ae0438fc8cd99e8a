"""Exceptions of the TensorSocket client; the same kinds as the Java library's."""


class TensorSocketError(Exception):
    """Base class of every error this client raises."""


class ProducerNotFound(TensorSocketError):
    """No producer runs under that name or directory.

    For a local name the message ends by naming the directories of producers that died without cleaning up, if
    there are any, and the command that frees them: running means holding the lock, not having a directory.
    """


class PermissionDenied(TensorSocketError):
    """The producer's directory or socket belongs to another user."""


class ProducerNotResponding(TensorSocketError):
    """The producer's process keeps its connection open but sent nothing, not even its once-a-second
    heartbeat, for the consumer's liveness timeout: it is stopped (SIGSTOP) or deadlocked."""


class ProducerGone(TensorSocketError):
    """The producer exited, was killed, or has finished and closed the connection."""


class EpochIncomplete(TensorSocketError):
    """The stream ended before this consumer's epoch was whole: it joined a finite stream mid-epoch and the producer
    could not complete its last epoch (a source that fixes its own order cannot load the missing samples again).
    Raised where the epoch's batches run out, after every sample that arrived; ``epoch`` and ``missing`` (samples of
    this consumer's share that never came) say what it lacks. See the Java EpochIncompleteException."""

    def __init__(self, message: str, epoch: int = -1, missing: int = 0):
        super().__init__(message)
        self.epoch = epoch
        self.missing = missing


class ProducerFailed(TensorSocketError):
    """The producer's loader raised an error (ERROR code LOADER_FAILED)."""


class ConsumerEvicted(TensorSocketError):
    """The producer disconnected this consumer for holding a batch too long (ERROR code EVICTED)."""


class JobFailed(TensorSocketError):
    """This consumer is a rank of a data-parallel job that cannot go on: another rank died or was evicted, or not all
    ranks joined in time (ERROR code JOB_FAILED). The message names the rank; restart the job's ranks together."""


class RequestRejected(TensorSocketError):
    """The producer refused this consumer's request, e.g. an impossible batch size (ERROR code BAD_REQUEST)."""


class ProtocolError(TensorSocketError):
    """A frame, descriptor or arena file broke the protocol (docs/PROTOCOL.md)."""


class ProtocolVersionError(ProtocolError):
    """The peer speaks another version of the control protocol or arena layout."""


class TensorSocketTimeout(TensorSocketError, TimeoutError):
    """A bounded wait ran out: the producer is alive but sent nothing in time."""


class BatchReleasedError(TensorSocketError):
    """A batch was read after it was released (by asking for the next one, or closing it)."""
