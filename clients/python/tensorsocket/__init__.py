"""The reference TensorSocket's import paths, for code written for it:

    from tensorsocket.producer import TensorProducer
    from tensorsocket.consumer import TensorConsumer

They are this client's classes (``tensorsocket_client``), whose calls take a producer's name where the reference takes
two TCP ports; the reference's calls are refused with a message showing the call here.
"""

from tensorsocket_client import TensorConsumer, TensorProducer, share

__all__ = ["TensorProducer", "TensorConsumer", "share"]
