"""``from tensorsocket.consumer import TensorConsumer``, as with the reference TensorSocket: this client's consumer."""

from tensorsocket_client import TensorConsumer

__all__ = ["TensorConsumer"]
