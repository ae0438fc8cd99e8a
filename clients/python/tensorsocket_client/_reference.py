"""The reference TensorSocket's call signatures, recognised so that code written for it is refused with a message
that shows the call here, rather than failing later on a port taken for a name or a batch size."""
from typing import Any, Sequence


def _looks_like_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, str) and value.isdigit()


def check_producer_call(name: Any, loader: Any) -> None:
    """Refuses ``TensorProducer(data_loader, "5556", "5557", ...)``: the reference's producer takes the loader first
    and two TCP ports; here it takes a name, then the loader."""
    if not isinstance(name, str) and (_looks_like_port(loader) or hasattr(name, "__iter__")):
        raise TypeError("TensorProducer(data_loader, %r, ...) is the reference TensorSocket's signature (a loader and "
                        "two TCP ports); here a producer has a name instead of ports, given first: "
                        "TensorProducer(\"NAME\", data_loader, rubber_band=B) with the rubber band in batches, and "
                        "consumers read it as TensorConsumer(\"NAME\", batch_size=64) (docs/guides/pytorch-and-sweeps.md, "
                        "'Moving from the reference implementation')" % (loader,))


def check_consumer_call(name: Any, positional: Sequence[Any]) -> None:
    """Refuses ``TensorConsumer("5556", "5557", batch_size=64)``: the reference's consumer takes two TCP ports; here
    it takes the producer's name (and, if given by position, a batch size)."""
    if _looks_like_port(name) and positional and _looks_like_port(positional[0]) and not isinstance(positional[0], int):
        raise TypeError("TensorConsumer(%r, %r, ...) is the reference TensorSocket's signature (two TCP ports); here a "
                        "consumer finds its producer by name: TensorConsumer(\"NAME\", batch_size=64), NAME as given "
                        "to TensorProducer(\"NAME\", data_loader) or tensorsocket serve --name NAME "
                        "(docs/guides/pytorch-and-sweeps.md, 'Moving from the reference implementation')"
                        % (name, positional[0]))
