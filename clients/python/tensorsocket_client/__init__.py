"""TensorSocket client for Python: read a TensorSocket producer's batches from shared memory, zero-copy.

    from tensorsocket_client import TensorConsumer
    with TensorConsumer("fmnist", batch_size=64) as loader:
        for batch in loader:
            t = batch.torch(); train(t["data"], t["label"])

Feed a PyTorch DataLoader (or any iterable of batches) into a producer of its own (started as
``tensorsocket serve --name fmnist --external`` unless one waits for a feeder):

    from tensorsocket_client import TensorProducer
    TensorProducer("fmnist", loader, epochs=10).run()      # or: for _ in producer: ... one epoch a pass; join()

Or let every trial of a sweep share one loader with one line (the first starts the producer):

    from tensorsocket_client import share
    loader = share("cifar-train", make_loader, batch_size=128)   # make_loader: importable, returns a DataLoader

The protocol it speaks is specified in docs/PROTOCOL.md.
"""

from .batch import Batch
from .consumer import TensorConsumer
from .errors import (
                     BatchReleasedError,
                     ConsumerEvicted,
                     EpochIncomplete,
                     JobFailed,
                     PermissionDenied,
                     ProducerFailed,
                     ProducerGone,
                     ProducerNotFound,
                     ProducerNotResponding,
                     ProtocolError,
                     ProtocolVersionError,
                     RequestRejected,
                     TensorSocketError,
                     TensorSocketTimeout,
)
from .feeder import FeederError, TensorProducer, feed
from .share import ShareFailed, ShareMismatch, share

__version__ = "0.1.0"
__all__ = ["TensorConsumer", "Batch", "TensorProducer", "share", "ShareMismatch", "ShareFailed", "feed", "FeederError",
           "TensorSocketError", "ProducerNotFound",
           "PermissionDenied", "ProducerGone", "ProducerFailed", "ProducerNotResponding", "ConsumerEvicted", "JobFailed",
           "EpochIncomplete",
           "RequestRejected", "ProtocolError", "ProtocolVersionError", "TensorSocketTimeout", "BatchReleasedError"]
