"""Feed a Python loader (a torch DataLoader, or any iterable of numpy arrays) into a Java producer.

    from tensorsocket_client import TensorProducer
    TensorProducer("cifar", loader, epochs=10).run()

The Java producer (``tensorsocket serve --name cifar --external``) keeps every consumer rule; this side
declares the batches, asks for a slot, writes each batch straight into the shared memory (one copy) and
publishes it. The frames are specified in docs/PROTOCOL.md (feeder socket, types 14 to 21).

A torch DataLoader over a map-style data set is fed by index (``_map_style``): the producer sends each epoch's
order and this side loads exactly those samples, so consumers that join mid-epoch get exact epochs.
"""

import atexit
import collections
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
import types
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import wire
from ._batch_tensors import _batch_problem, _check_carriable, _copy_hint, _dtype_code, _named
from ._decoded import marked
from ._feeder_arena import FeederArena, regions_of
from ._feeder_link import FeederError, FeederLink, ProducerEnded
from ._interrupts import InterruptWatch
from ._lane_feeder import LaneFeeders
from ._loader_workers import ended_with_this_process
from ._map_style import MapStyle
from ._producer_process import serve_args, start_producer, stop_unserved
from ._reference import check_producer_call
from ._waiting import Waiting
from .directory import FEEDER_SOCKET_FILE, directory_for, is_locked, launcher, not_found
from .errors import ProtocolError, TensorSocketError, TensorSocketTimeout

_log = logging.getLogger("tensorsocket_client")



def workers_share(loader: Any, batch_bytes: int) -> int:
    """The bytes of /dev/shm a torch DataLoader's worker processes hold at once beside the arena: each keeps up to
    ``prefetch_factor`` batches handed over there (workers x prefetch x batch bytes); 0 without workers."""
    workers = int(getattr(loader, "num_workers", 0) or 0)
    if workers <= 0:
        return 0
    return workers * int(getattr(loader, "prefetch_factor", None) or 2) * int(batch_bytes)


def _shm_note(text: str, arena_path: Optional[str]) -> str:
    """For a DataLoader worker that died (torch says "exited unexpectedly", or "Bus error" where it saw the signal):
    what shared memory was left, since a worker that cannot map its batch in a full /dev/shm dies of a bus error (a
    container's default 64 MiB does it), and what to do; "" for any other failure."""
    if "exited unexpectedly" not in text and "Bus error" not in text and "shared memory" not in text:
        return ""
    where = os.path.dirname(arena_path) if arena_path else "/dev/shm"
    try:
        st = os.statvfs(where)
        arena = os.path.getsize(arena_path) if arena_path else 0
    except OSError:
        return ""
    free, total = st.f_bavail * st.f_frsize >> 20, st.f_blocks * st.f_frsize >> 20
    return ("; if it died of a bus error it ran out of shared memory in %s (%d MiB free of %d MiB; this producer's "
            "arena takes %d MiB, and each DataLoader worker shares its batches there too): give the container more "
            "(docker run --shm-size=1g), the loader fewer workers or a smaller prefetch_factor, or the producer a "
            "smaller arena (arena_mb)" % (os.path.dirname(where) if arena_path else where, free, total, arena >> 20))


def _loader_failure(e: BaseException, epoch: int, batch_index: int, arena_path: Optional[str] = None) -> str:
    """What a consumer is told about an exception the loader raised: its type and message, where it came from,
    and the sample index where the dataset's ``__getitem__`` is on the way; for a DataLoader worker that died, the
    shared memory left (``_shm_note``)."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "Original Traceback" in text and lines:
        # Raised in a DataLoader worker: torch re-raises it here with the worker's traceback as text.
        original = lines[-1]
        files = [ln for ln in lines if ln.startswith("File ")]
        where = files[-1] if files else ""
    else:
        original = "%s: %s" % (type(e).__name__, lines[0] if lines else "")
        frames = traceback.extract_tb(e.__traceback__)
        where = "%s:%d in %s" % (os.path.basename(frames[-1].filename), frames[-1].lineno, frames[-1].name) if frames else ""
    sample = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "__getitem__":
            for key in ("index", "idx", "i", "item", "key"):
                v = tb.tb_frame.f_locals.get(key)
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                    sample = int(v)
                    break
        tb = tb.tb_next
    return "the loader raised %s (%s%s) while loading batch %d of epoch %d%s" % (
        original, where, ", sample index %d" % sample if sample is not None else "", batch_index, epoch,
        _shm_note(text, arena_path))


_CLAIM = wire.encode(wire.Claim())

DEFAULT_LANES = 2
"""Lane connections a feeder that loads by index opens, as many as a producer runs lanes by default (``lanes=``)."""


def command_line(argv: List[str], limit: int) -> str:
    """``argv`` joined by spaces, of at most ``limit`` characters: whole arguments only, an ellipsis after the last
    one that fits (a message never shows an argument cut in two)."""
    shown = ""
    for i, a in enumerate(argv):
        more = (" " if shown else "") + a
        if len(shown) + len(more) > limit - (0 if i == len(argv) - 1 else 2):
            return (shown + " \u2026") if shown else "python3 \u2026"
        shown += more
    return shown or "python3"

class TensorProducer:
    """Feeds ``loader`` into the Java producer called ``name``.

    ``loader`` is iterated once per epoch (a torch DataLoader reshuffles itself each time); it may yield
    tensors, tuples/lists or dicts of torch tensors or numpy arrays, with the batch dimension first. Tensor
    names come from dict keys or ``names`` (default ``("data", "label")`` for pairs); consumers get them in
    this order, so ``inputs, labels = batch`` unpacks as the loader yielded them. Samples per epoch come
    from ``len(loader.dataset)`` or ``samples_per_epoch``.

    Exact epochs for late joiners: a torch DataLoader over a map-style data set with its default sampler
    (``shuffle=True`` or ``False``) is fed by index: the producer chooses each epoch's order so that a consumer
    joining mid-epoch still sees every sample once per epoch, and this feeder loads those samples with the
    loader's own batch size, collate function, drop_last and worker processes (``num_workers``). ``seed`` fixes
    the shuffles (default: a new random seed per producer); ``exact_epochs=False`` keeps the loader's own order
    (consumers joining mid-epoch then roll), ``exact_epochs=True`` refuses a loader that cannot be fed by index.

    Decoding once per sweep: ``cache_mb=N`` keeps each sample of such a loader's data set, as loaded before its
    augmentation, in up to N MiB of memory shared with the loader's workers, so later epochs run only the
    augmentation. The data set applies a ``transform`` attribute in ``__getitem__`` (torchvision's convention, as
    ``ImageFolder``) or defines ``load(i)`` and ``augment(sample)``; see ``_decoded_cache``. What does not fit is
    loaded every epoch; the log says per epoch what the cache holds and its hits.

    Trials that augment themselves (``share(..., augment=SampleAugment(T))``): ``decoded=True`` serves each sample as
    the data set loads it with its transform off (torchvision's ``ImageFolder``: the whole decoded image), in rows of
    ``decoded_bytes`` (default: sized from the data set's files or first samples), with its index; each trial applies
    its own ``T`` (``_decoded``, ``_augment_workers``). The loader's ``num_workers`` is the trials' default number of
    augmentation workers.

    Trials at their own pace: where such a loader is fed by index, a trial that falls behind the others is moved by
    the producer to a lane of its own, whose batches this feeder loads on a lane connection with a DataLoader of the
    loader's settings and worker processes of its own (``_lane_feeder``); ``lanes`` (default 2) bounds them, 0 turns
    them off. A stream that ended as declared keeps the lanes loading until the producer closes them: ``run()``,
    ``join()`` and the script's end wait for that (at once where no trial is in a lane).

    Two ways to drive it:

    * ``run()`` feeds ``epochs`` epochs (default 1) and ends the stream.
    * As the reference implementation: each pass of ``for _ in producer`` feeds one epoch (yielding after
      each published batch); ``join()`` ends the stream after the epochs fed and waits until the producer
      has served them to its consumers and exited. Given ``epochs``, the stream also ends after that many
      passes; without it, the consumers see ``producer_epochs == 0`` (until the feeder stops).

    When no producer of that name waits for a feeder, one is started (``start_producer=True``) as a process
    of its own that stops with this feeder's process, with the producer options given here:
    ``min_consumers``, ``rubber_band`` (batches), ``start_grace``, ``stall_timeout``, ``idle_timeout``
    (seconds), ``arena_mb`` or ``slots``, ``lanes``; ``flight="HOST:PORT"`` serves it to other hosts over Arrow Flight too
    (``flight_token_file``: their shared token, needed unless HOST is loopback). A failing loader reaches every
    consumer as an error carrying the
    exception's type, message and where it was raised; Ctrl-C stops the producer, consumers told it stopped.
    """

    def __init__(self, name: str, loader: Iterable[Any], epochs: Optional[int] = None,
                 names: Optional[Sequence[str]] = None, samples_per_epoch: Optional[int] = None, description: str = "",
                 start_producer: bool = True, connect_timeout: float = 60.0, batch_timeout: float = 600.0,
                 epoch_loader: Optional[Callable[[int], Iterable[Any]]] = None, exact_epochs: Optional[bool] = None,
                 seed: Optional[int] = None, cache_mb: Optional[float] = None, decoded: bool = False,
                 decoded_bytes: Optional[int] = None, **producer_options: Any):
        check_producer_call(name, loader)
        if epochs is not None and (int(epochs) != epochs or epochs < 1):
            raise ValueError("epochs must be a positive integer (or None: one per pass, until join()), got %r" % (epochs,))
        self._serve_args = serve_args(producer_options)
        lanes = producer_options.get("lanes")
        self._lane_count = DEFAULT_LANES if lanes is None else int(lanes)
        self._lane_feeders: Optional[LaneFeeders] = None
        self.name = name
        directory_for(name)  # checks the name now, not after the first batch
        self.loader = loader
        self.epochs = int(epochs) if epochs is not None else None
        self.names = tuple(names) if names is not None else None
        self.description = marked(description, getattr(loader, "num_workers", 0)) if decoded else description
        self._epoch_loader = epoch_loader or (lambda e: loader)
        if epoch_loader is not None and exact_epochs:
            raise ValueError("exact_epochs=True feeds the loader's data set by index; an epoch_loader keeps its own order")
        if epoch_loader is not None and cache_mb is not None:
            raise ValueError("cache_mb keeps samples of a data set fed by index; an epoch_loader keeps its own order")
        if epoch_loader is not None and decoded:
            raise ValueError("decoded (augment=) feeds the loader's data set by index; an epoch_loader keeps its own "
                             "order")
        self._by_index = (None if epoch_loader is not None
                          else MapStyle.of(loader, exact_epochs, seed, cache_mb, decoded, decoded_bytes))
        self._samples_per_epoch = samples_per_epoch
        self._start_producer = start_producer
        self._connect_timeout = connect_timeout
        self._batch_timeout = batch_timeout
        self._process: Optional[subprocess.Popen] = None
        self._adopted = False
        self._not_started = "start one: %s serve --name %s --external" % (launcher(), name)  # why none was started
        self._conn: Optional[FeederLink] = None
        self._arena: Optional[FeederArena] = None
        self._arena_path: Optional[str] = None
        self._spec = None
        self._declared_epochs = None
        self._epoch = 0            # the next epoch to feed
        self._in_epoch = False     # an epoch is being fed (a stop now is mid-epoch)
        self._epoch_order: Optional[List[int]] = None  # the producer's order of the epoch being fed by index
        self._ended = False        # the stream ended (all epochs fed, stopped, or failed)
        self._loader_error = None  # (the exception the loader raised, what consumers are told of it)
        self._interrupts = InterruptWatch()  # the epoch being fed's (see _feed_epoch)
        self.batches_published = 0
        self.producer_pid = -1

    # -------------------------------------------------------------------------------- the producer

    def _feeder_socket(self) -> Path:
        return directory_for(self.name) / FEEDER_SOCKET_FILE

    def _start_java_producer(self) -> None:
        if self._start_producer and not self._adopted:
            self._process, self._not_started = start_producer(self.name, self._serve_args)

    def adopt_producer(self, process: Optional[subprocess.Popen], why: str) -> None:
        """Feeds the producer ``process`` started for this feeder beforehand (``_producer_process.start_producer`` with
        this feeder's options: it starts while the loader is built), or, where it is None, the one that ``why`` says
        was running; this feeder starts none of its own."""
        self._process, self._not_started, self._adopted = process, why or self._not_started, True

    def _connect(self) -> FeederLink:
        path = self._feeder_socket()
        waiting = Waiting("producer '%s' (its feeder socket %s)" % (self.name, path), self._connect_timeout)
        while True:
            if path.exists():
                try:
                    return FeederLink(path, self._connect_timeout)
                except OSError:
                    pass
            if self._process is not None and self._process.poll() is not None:
                if is_locked(path.parent):  # another feeder's producer came first: connecting is refused, naming it
                    self._process = None
                    self._not_started = "producer '%s' was started by another feeder at the same time" % self.name
                    continue
                raise not_found("the producer started for '%s' (%s serve --name %s --external) exited with status "
                                       "%d before it took this feeder; its output above says why"
                                       % (self.name, launcher(), self.name, self._process.returncode))
            if waiting.left() <= 0:
                if self._process is not None:
                    how = "started `%s serve --name %s --external`, which did not open it" % (launcher(), self.name)
                else:
                    how = self._not_started
                raise not_found("no producer '%s' waits for a feeder (no %s%s); %s"
                                       % (self.name, path, waiting.within(), how))
            waiting.note("no feeder socket yet")
            time.sleep(0.01)  # a trial waits for its first batch behind this: ask often, it costs next to nothing

    def _attach(self, first: List[Tuple[str, np.ndarray]], batch_size: int, samples: int,
                meanwhile: Optional[Callable[[], None]] = None) -> None:
        """Connects and declares the batches, ``first`` showing what each holds; ``meanwhile`` runs while the
        producer makes its arena for them."""
        _check_carriable(first)
        self._spec = [(nm, a.dtype, a.shape[1:]) for nm, a in first]
        self._batch_size = batch_size
        self._epoch_samples = samples
        if self._declared_epochs is None:
            self._declared_epochs = self.epochs or 0
        # Connected only now that a batch is in hand: the producer gives a feeder 10 s to declare.
        self._conn = self._connect()
        self._conn.sock.settimeout(self._batch_timeout)
        self._register_exit()
        self._declare(first, batch_size, samples, meanwhile)

    def _declare(self, first: List[Tuple[str, np.ndarray]], batch_size: int, samples: int,
                 meanwhile: Optional[Callable[[], None]] = None) -> None:
        tensors = tuple(wire.TensorSpec(n, _dtype_code(a, n), tuple(a.shape[1:])) for n, a in first)
        ix = self._by_index
        self._conn.send(wire.FeederHello(os.getpid(), command_line(sys.argv, 200), batch_size, samples,
                                         self._declared_epochs, self.description, tensors,
                                         ix.size if ix else 0, bool(ix and ix.shuffle), ix.seed if ix else 0,
                                         self._lane_count if ix else 0,
                                         workers_share(self.loader, batch_size * sum(a[:1].nbytes for _, a in first))))
        if meanwhile is not None:
            meanwhile()
        welcome = self._conn.read(wire.FeederWelcome, "FEEDER_HELLO")
        self.producer_pid = welcome.producer_pid
        arena_path = welcome.arena_path
        self._arena_path = arena_path
        self.claims_ahead = welcome.claims_ahead
        self._regions = regions_of(tensors, first, batch_size)
        self._arena = FeederArena(arena_path, self._regions, batch_size)
        hint = _copy_hint(max(r[2] for r in self._regions))
        if hint is not None:
            _log.warning(hint)
        if ix is not None and self._lane_count > 0:
            self._lane_feeders = LaneFeeders(self.name, self._feeder_socket(), self._lane_count, ix.lane_loader,
                                             self.names, self._spec, self._regions, batch_size,
                                             lambda e, epoch, i: _loader_failure(e, epoch, i, self._arena_path))
            self._lane_feeders.start()

    # -------------------------------------------------------------------------------- feeding

    def __len__(self) -> int:
        """Batches in one epoch of the loader."""
        return len(self.loader)

    def __iter__(self) -> Iterator[int]:
        """Feeds one epoch; yields after each published batch (its sequence number)."""
        if self._ended:
            raise FeederError("the stream of producer '%s' has ended (%d epochs fed); a new stream needs a new "
                              "TensorProducer" % (self.name, self._epoch))
        if self.epochs is not None and self._epoch >= self.epochs:
            raise FeederError("all %d epochs declared for producer '%s' were fed; pass epochs=None to feed one per "
                              "pass until join()" % (self.epochs, self.name))
        return self._pass()

    def _pass(self) -> Iterator[int]:
        try:
            yield from self._feed_epoch(self._epoch)
        except GeneratorExit:
            self._stop("its feeder (pid %d) stopped iterating in the middle of epoch %d" % (os.getpid(), self._epoch))
            raise
        except KeyboardInterrupt:
            self._stop("its feeder (pid %d) was interrupted (Ctrl-C)" % os.getpid(), now=True)
            raise
        except ProducerEnded:
            self._end()  # the producer's normal end, by its idle timeout: nothing to tell it
            raise
        except BaseException as e:
            self._fail(e)
            raise
        self._epoch += 1
        if self._declared_epochs and self._epoch >= self._declared_epochs:
            self._end(finished=True)

    def run(self) -> int:
        """Feeds the declared epochs (default 1) and ends the stream; returns the number of batches published."""
        if self.epochs is None and self._declared_epochs is None:
            self.epochs = 1
        while not self._ended and (self._epoch < (self.epochs or 0)):
            for _ in self:
                pass
        self.close()
        self.finish_lanes()
        return self.batches_published

    def _batches(self, loader: Iterable[Any], first: int = 0) -> Iterator[Any]:
        self._batch_index = first
        for batch in loader:
            yield batch
            self._batch_index += 1

    def _order(self, epoch: int) -> List[int]:
        """Epoch ``epoch``'s order, asked for (ORDER_REQUEST) and received (ORDER frames) before the epoch."""
        self._conn.send(wire.OrderRequest(epoch))
        ids: List[int] = []
        total = None
        while total is None or len(ids) < total:
            m = self._conn.read(wire.EpochOrder, "ORDER_REQUEST")
            if m.epoch != epoch or m.first != len(ids) or (total is not None and m.total != total):
                raise ProtocolError("the producer sent ids %d.. of epoch %d's order of %d where ids %d.. of epoch %d "
                                    "were due" % (m.first, m.epoch, m.total, len(ids), epoch))
            total = m.total
            ids.extend(m.ids)
        return ids

    def _indexed_loader(self, epoch: int) -> Iterable[Any]:
        """For a feed by index: the loader of the epoch's order. Before the first epoch it declares the batches from a
        probe of the data set; where it can foresee epoch 0's order (``MapStyle.first_order``) the probe is one sample,
        and the loader's workers start on that order while the producer makes its arena; they go on where the
        producer's order is the same, as it is whenever both sides follow the one rule."""
        ix = self._by_index
        if self._spec is not None:
            self._epoch_order = self._order(epoch)
            return ix.loader(self._epoch_order)
        foreseen = ix.first_order() if epoch == 0 else None
        started: List[Iterable[Any]] = []

        def start_loading() -> None:
            started.append(self._loading(epoch, lambda: iter(ix.loader(foreseen or ()))))

        first = self._loading(epoch, lambda: ix.probe(1 if foreseen is not None else None))
        self._attach(_named(first, self.names), ix.batch_size, ix.samples_per_epoch(),
                     meanwhile=start_loading if foreseen is not None else None)
        order = self._epoch_order = self._order(epoch)
        if not started:
            return ix.loader(order)
        if order == foreseen:
            return started[0]
        _log.warning("producer '%s' drew another order for epoch 0 than this feeder foresaw (the two sides' rules "
                     "differ: report it); the epoch is loaded again in the producer's order", self.name)
        return ix.loader(order)

    def _loading(self, epoch: int, load: Callable[[], Any]) -> Any:
        """``load()``'s result; an exception it raises is the loader's, which the consumers are told of."""
        try:
            return load()
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except Exception as e:
            self._loader_error = (e, _loader_failure(e, epoch, 0, self._arena_path))
            raise

    def _feed_epoch(self, epoch: int) -> Iterator[int]:
        """Feeds epoch ``epoch`` (see _feed_batches), a Ctrl-C that Python lost while the feeder ran its own code
        raised after the batch it came during (InterruptWatch)."""
        with InterruptWatch() as self._interrupts:
            yield from self._feed_batches(epoch)

    def _feed_batches(self, epoch: int) -> Iterator[int]:
        """Feeds epoch ``epoch``, one batch after another, pipelined: the feeder keeps as many claims in flight as the
        producer allows (its claims ahead), for slots of the batches the epoch still has to come by its declared
        samples, so the claims' round trips to the producer run while it copies earlier batches."""
        self._in_epoch = True
        self._batch_index = 0
        if self._conn is None:
            self._start_java_producer()
        samples = 0
        batches = self._batches(self._indexed_loader(epoch) if self._by_index
                                else ended_with_this_process(self._epoch_loader(epoch)))
        claimed = 0    # samples the slots claimed so far in this epoch hold
        in_flight = 0  # claims sent and not answered yet
        grants = collections.deque()

        def refill() -> bytes:
            """The claims that top the claims in flight and the grants in hand up to the producer's claims ahead."""
            nonlocal claimed, in_flight
            n_claims = 0
            while in_flight + len(grants) + n_claims < self.claims_ahead and claimed < self._epoch_samples:
                n_claims += 1
                claimed += self._batch_size
            in_flight += n_claims
            return _CLAIM * n_claims

        cur = self._next_batch(batches, epoch)
        taken = 0  # samples taken from the loader in this epoch: those published and the batch in hand
        if cur is not None:
            self._conn.send_frames(refill())
        while cur is not None:
            tensors, n, rows = cur
            taken += n
            if not grants:
                if in_flight == 0:
                    raise ValueError("the loader yielded more than the %d samples per epoch declared for epoch %d"
                                     % (self._epoch_samples, epoch))
                m = self._conn.read((wire.SlotGrant, wire.Paused), "CLAIM")
                while isinstance(m, wire.Paused):
                    batches = self._pause_loading(batches, epoch, taken, rows)
                    m = self._conn.read((wire.SlotGrant, wire.Paused), "CLAIM")
                grants.append(m)
                in_flight -= 1
            grant = grants.popleft()
            for view, (_, a) in zip(self._arena.views(grant.offset), tensors):
                np.copyto(view[:n], a, casting="no")
            if rows >= 0:
                self._by_index.rows_copied(rows)
            # the publish and the claims that refill: one write
            self._conn.send_frames(wire.encode(wire.Publish(grant.seq, n)) + refill())
            samples += n
            self.batches_published += 1
            self._interrupts.pause()  # the caller's step runs until it asks for the next batch
            yield grant.seq
            self._interrupts.resume()
            cur = self._next_batch(batches, epoch)
        if self._spec is None:
            raise ValueError("the loader yielded no batch in epoch %d" % epoch)
        self._conn.send(wire.FeederEpochEnd(epoch, samples))
        self._conn.read(wire.FeederEpochEnd, "FEEDER_EPOCH_END")  # the producer took the epoch, or says (ERROR) why not
        if self._by_index is not None and self._by_index.cache is not None:
            _log.info("producer '%s', %s", self.name, self._by_index.cache.epoch_line(epoch))
        self._in_epoch = False

    def _pause_loading(self, batches: Iterator[Any], epoch: int, taken: int, held_rows: int) -> Iterator[Any]:
        """The producer has no consumer any more (PAUSED) and waits for one: a loader by index ends its workers now
        (what they loaded ahead is loaded again), and the batches from here on come from a loader over the rest of the
        epoch's order, started when the next is asked for, once a consumer came. Other loaders go on as they are."""
        ix = self._by_index
        if ix is None or not ix.has_workers() or self._epoch_order is None:
            return batches
        first = self._batch_index + 1
        if isinstance(batches, types.GeneratorType):
            batches.close()  # an epoch's DataLoader iterator, and its workers, end with it
        ix.pause([held_rows] if held_rows >= 0 else [])
        _log.info("producer '%s' has no consumer attached and waits for one: the feeder ended its loader's workers; "
                  "epoch %d loads on from sample %d when one comes", self.name, epoch, taken)
        rest = self._epoch_order[taken:]
        return self._batches(_LazyLoader(lambda: ix.loader(rest)), first)

    def _next_batch(self, batches: Iterator[Any], epoch: int):
        """The loader's next batch as (named tensors, samples, the row buffer to give back once they are copied or
        -1), checked and declared (the first); None at its end."""
        try:
            batch = next(batches)
        except StopIteration:
            self._interrupts.check()
            return None
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except Exception as e:
            self._loader_error = (e, _loader_failure(e, epoch, self._batch_index, self._arena_path))
            raise
        self._interrupts.check()
        rows = -1
        if self._by_index is not None:
            batch, rows = self._by_index.in_place(batch)
        tensors = _named(batch, self.names)
        n = len(tensors[0][1])
        if self._spec is None:
            batch_size = getattr(self.loader, "batch_size", None) or n
            spe = self._samples_per_epoch
            if spe is None:
                ds = getattr(self.loader, "dataset", None)
                if ds is None or not hasattr(ds, "__len__"):
                    raise ValueError("give samples_per_epoch=: the loader has no dataset whose len() says it")
                spe = len(ds)
                if getattr(self.loader, "drop_last", False):
                    spe = spe // batch_size * batch_size
            self._attach(tensors, batch_size, spe)
        self._check(tensors, self._spec, n, epoch)
        return tensors, n, rows

    def _check(self, tensors, spec, n, epoch):
        problem = _batch_problem(tensors, spec, n, epoch)
        if problem is not None:
            self._refuse(problem)

    def _refuse(self, problem: str):
        msg = "feeder pid %d: %s" % (os.getpid(), problem)
        self._send_error(wire.BAD_REQUEST, msg)
        raise FeederError(msg)

    # -------------------------------------------------------------------------------- ending

    def _send_error(self, code: int, message: str) -> None:
        """Tells the producer why the stream ends: on the connection, or, before there is one, on a connection
        made for it, so the producer's log says why and one started for this feeder stops at once."""
        conn = self._conn
        if conn is None:
            # A producer this feeder started may still be starting: give it the time it takes to open its socket
            # (a JVM's start on a loaded machine, beside the trainers launched with it, can take many seconds).
            # Its socket file appears a moment before it listens on it, so a refused connect is tried again.
            deadline = time.monotonic() + self._connect_timeout
            while True:
                if self._feeder_socket().exists():
                    try:
                        conn = FeederLink(self._feeder_socket(), 2.0)
                        break
                    except OSError:
                        pass
                starting = self._process is not None and self._process.poll() is None
                if not starting or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        if conn is not None:
            conn.error(code, message)
            if conn is not self._conn:
                conn.close()

    def _fail(self, e: BaseException) -> None:
        if not self._ended:
            if self._loader_error is not None and self._loader_error[0] is e:
                self._send_error(wire.LOADER_FAILED, self._loader_error[1])
            elif not isinstance(e, TensorSocketError):  # the producer's own refusals need no answer
                self._send_error(wire.LOADER_FAILED, "its feeder (pid %d) failed: %s: %s" % (os.getpid(), type(e).__name__, e))
        self._end()

    def _stop(self, reason: str, now: bool = False, finished: bool = False) -> None:
        """Ends the stream on purpose: at an epoch boundary it ends there (``finished``), mid-epoch (or ``now``, for
        an interrupted feeder, whose stream is not what was asked for) the producer stops."""
        if not self._ended:
            self._send_error(wire.STOPPED if now else wire.PRODUCER_CLOSED, reason)
        self._end(finished=finished and not now)
        p = self._process
        if now and p is not None:
            # Interrupted: the producer this feeder started is gone too when the prompt comes back.
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)

    def _end(self, finished: bool = False) -> None:
        """The stream ended; ``finished``: as declared (or between epochs, on purpose), where the producer's lanes may
        still need samples loaded (see :meth:`finish_lanes`)."""
        self._ended = True
        self._in_epoch = False
        if self._by_index is not None:
            self._by_index.close()
        if self._lane_feeders is not None and not finished:
            self._lane_feeders.close()
            self._lane_feeders = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._arena is not None:
            self._arena.close()
            self._arena = None
        self._stop_unserved_producer()

    def _stop_unserved_producer(self) -> None:
        """A producer this feeder started that never got a declaration stops now, not after its wait."""
        if self._spec is None:
            stop_unserved(self._process)

    def close(self) -> None:
        """Ends the stream after the epochs fed so far (mid-epoch, the producer stops); idempotent."""
        if self._ended:
            return
        if self._conn is None:
            self._end()
        elif self._in_epoch:
            self._stop("its feeder (pid %d) closed in the middle of epoch %d" % (os.getpid(), self._epoch))
        elif self._declared_epochs and self._epoch >= self._declared_epochs:
            self._end(finished=True)
        else:
            self._stop("its feeder (pid %d) finished after %d epochs" % (os.getpid(), self._epoch), finished=True)

    def finish_lanes(self, timeout: Optional[float] = None) -> None:
        """Once the stream ended as declared: waits until the producer needs no more of this feeder's lane connections
        (it closes them once its main stream ended and no lane runs: at once where no trial fell behind, else when
        the last lane's trial caught up, finished or left). ``run()``, ``join()`` and the end of the script wait so."""
        lanes = self._lane_feeders
        if lanes is None or not self._ended:
            return
        if lanes.wait(timeout):
            self._lane_feeders = None

    def join(self, timeout: Optional[float] = None) -> Optional[int]:
        """Ends the stream after the epochs fed so far, then waits until the producer has served them and exited
        (its consumers are done): for a producer this feeder started, returns its exit status.

        ``timeout`` bounds the wait (TensorSocketTimeout); without it, the producer's own rules bound it (it
        exits once its consumers finished the stream, or its drain timeout passed)."""
        self.close()
        self.finish_lanes(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._process is not None:
            try:
                return self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise TensorSocketTimeout("producer '%s' was still serving its consumers after %.0f s"
                                          % (self.name, timeout)) from None
        d = directory_for(self.name)
        while is_locked(d):
            if deadline is not None and time.monotonic() > deadline:
                raise TensorSocketTimeout("producer '%s' was still serving its consumers after %.0f s" % (self.name, timeout))
            time.sleep(0.05)
        return None

    def wait_producer(self, timeout: Optional[float] = None) -> Optional[int]:
        """Waits for a producer this object started (if any) to finish serving; returns its exit status."""
        if self._process is None:
            return None
        return self._process.wait(timeout)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is KeyboardInterrupt:
            self._stop("its feeder (pid %d) was interrupted (Ctrl-C)" % os.getpid(), now=True)
        elif exc is not None:
            self._fail(exc)
        else:
            self.close()

    def _register_exit(self) -> None:
        # A script that ends without join() or close() still ends the stream cleanly at an epoch boundary.
        ref = weakref.ref(self)

        def at_exit():
            p = ref()
            if p is not None:
                p.close()
                p.finish_lanes()
        atexit.register(at_exit)


class _LazyLoader:
    """An iterable made only when it is iterated: the loader over the rest of a paused epoch starts its workers when
    the feeder asks for its next batch, not when the producer paused."""

    def __init__(self, make: Callable[[], Iterable[Any]]):
        self._make = make

    def __iter__(self) -> Iterator[Any]:
        return iter(self._make())


def feed(name: str, loader: Iterable[Any], epochs: int = 1, **options) -> int:
    """Feeds ``loader`` into producer ``name`` for ``epochs`` epochs; returns the batches published."""
    return TensorProducer(name, loader, epochs=epochs, **options).run()
