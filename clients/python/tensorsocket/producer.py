"""``from tensorsocket.producer import TensorProducer``, as with the reference TensorSocket: this client's feeder."""

from tensorsocket_client import TensorProducer

__all__ = ["TensorProducer"]
