"""TensorSocket client for Python: read a TensorSocket producer's batches from shared memory, zero-copy.

    from tensorsocket_client import TensorConsumer
    with TensorConsumer("fmnist", batch_size=64) as loader:
        for batch in loader:
            t = batch.torch(); train(t["data"], t["label"])

Feed a PyTorch DataLoader (or any iterable of batches) into a producer of its own (started as
``tensorsocket serve --name fmnist --external`` unless one waits for a feeder):

    from tensorsocket_client import TensorProducer
    TensorProducer("fmnist", loader, epochs=10).run()      # or: for _ in producer: ... one epoch a pass; join()

The protocol it speaks is specified in docs/PROTOCOL.md.
"""

from .batch import Batch
from .consumer import TensorConsumer
from .feeder import FeederError, TensorProducer, feed
from .errors import (BatchReleasedError, ConsumerEvicted, JobFailed, PermissionDenied, ProducerFailed, ProducerGone,
                     ProducerNotFound, ProducerNotResponding, ProtocolError, ProtocolVersionError, RequestRejected,
                     TensorSocketError, TensorSocketTimeout)

__version__ = "0.1.0"
__all__ = ["TensorConsumer", "Batch", "TensorProducer", "feed", "FeederError", "TensorSocketError", "ProducerNotFound",
           "PermissionDenied", "ProducerGone", "ProducerFailed", "ProducerNotResponding", "ConsumerEvicted", "JobFailed",
           "RequestRejected", "ProtocolError", "ProtocolVersionError", "TensorSocketTimeout", "BatchReleasedError"]
