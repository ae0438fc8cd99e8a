"""A consumer's checkpoint: the small dict of plain values ``state_dict()`` returns and ``load_state_dict()`` takes,
as torchdata's ``StatefulDataLoader`` does, for ``torch.save`` beside the model. It says which producer and orders
the consumer read, where its epoch begins and how many samples of its share it read: the state describes the next
batch to come. A consumer given a state before it iterates is served the rest of that epoch by index (the RESUME
frame; the producer replays the orders from the draws in the state, so it need not be the one that served the
epoch's start), then reads on as a consumer that joined then.

The draws come from the producer's ``draws`` file (the Java DrawLog documents it)::

    tensorsocket-draws 1
    key 7402398461223 dataset 60000 samples 60000 shuffle 1
    0
    1 300 4100
"""
import os
from typing import Any, Dict, List, Optional, Tuple

from . import wire
from .directory import DRAWS_FILE

VERSION = 1
_MAGIC = "tensorsocket-draws 1"


def read_draws(directory: str) -> Optional[Tuple[Dict[str, int], List[Tuple[int, List[int]]]]]:
    """The producer's order identity (key, dataset, samples, shuffle) and its draws, or None where it logs none (its
    source fixes its own order)."""
    try:
        with open(os.path.join(directory, DRAWS_FILE)) as f:
            text = f.read()
    except OSError:
        return None
    lines = text.split("\n")[:-1]  # a last line without its newline is still being written
    if len(lines) < 2 or lines[0] != _MAGIC:
        return None
    words = lines[1].split()
    header = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}
    draws = []
    for line in lines[2:]:
        values = [int(v) for v in line.split()]
        draws.append((values[0], values[1:]))
    return header, draws


def chain(draws: List[Tuple[int, List[int]]], first: int, last: int) -> List[int]:
    """The draws that replay epochs ``first`` to ``last`` (those drawn), from the fresh draw they follow on, flat:
    epoch, boundary count, boundaries, ..."""
    by_epoch = dict(draws)
    start = first
    while start in by_epoch and start - 1 in by_epoch and by_epoch[start]:  # boundaries: it continues the one before
        start -= 1
    flat: List[int] = []
    for epoch in range(start, last + 1):
        if epoch not in by_epoch:
            break
        flat += [epoch, len(by_epoch[epoch])] + list(by_epoch[epoch])
    return flat


def take(consumer, stream, welcome) -> Dict[str, Any]:
    """The state of ``consumer`` now: its current epoch and the samples of its share it handed out (an epoch read
    whole: the next one, none read)."""
    n = welcome.samples_per_epoch
    if not stream.epoch_started:
        base, handed = stream.start_position, 0
    elif stream.share_index >= stream.share_count:
        base, handed = stream.epoch_base + n, 0
    else:
        base, handed = stream.epoch_base, stream.share_index
    job = consumer.job_rank
    state: Dict[str, Any] = {
        "tensorsocket": VERSION, "producer": consumer.producer, "samples_per_epoch": n,
        "epoch": base // n, "epoch_base": base, "handed": handed,
        "batch_size": consumer.batch_size, "drop_last": consumer.drop_last,
        "job": job[0] if job else None, "rank": job[1] if job else 0, "world_size": job[2] if job else 1,
        "order_key": None, "dataset_size": None, "shuffle": None, "draws": None,
    }
    logged = read_draws(consumer.directory)
    if logged is not None:
        header, draws = logged
        x = base // n
        state.update(order_key=header.get("key"), dataset_size=header.get("dataset"),
                     shuffle=bool(header.get("shuffle")), draws=chain(draws, x, x + 1 if base % n else x))
    return state


def resume_frame(consumer, welcome, state: Dict[str, Any]) -> Optional["wire.Resume"]:
    """The RESUME that continues ``state``'s epoch for ``consumer``, None where nothing of it is left to read, or
    ValueError saying why the state is not this consumer's."""
    if not isinstance(state, dict) or state.get("tensorsocket") != VERSION:
        raise ValueError("not a state of a TensorSocket consumer (from state_dict()): %r" % (state,))
    job = consumer.job_rank
    mine = {"producer": consumer.producer, "samples_per_epoch": welcome.samples_per_epoch,
            "batch_size": consumer.batch_size, "drop_last": consumer.drop_last,
            "job": job[0] if job else None, "rank": job[1] if job else 0, "world_size": job[2] if job else 1}
    differ = ["%s %r (this consumer: %r)" % (k, state.get(k), v) for k, v in mine.items() if state.get(k) != v]
    if differ:
        raise ValueError("the state was taken by another consumer: " + "; ".join(differ))
    if state["handed"] == 0:
        return None
    if state["draws"] is None:
        raise ValueError("the state's producer '%s' logged no draws (its source fixes its own order): the rest of its "
                         "epoch cannot be loaded again" % state["producer"])
    return wire.Resume(state["epoch_base"], state["handed"], state["order_key"], state["dataset_size"],
                       state["samples_per_epoch"], state["shuffle"], tuple(state["draws"]))
