"""The feeder's DataLoader workers end with the feeder, however it ends, and with its feed.

A feeder killed (SIGKILL, the OOM killer) cannot stop its loaders' worker processes. PyTorch's workers notice a dead
parent by their parent pid changing, but each reads it once it is running: one forked just before the kill (a lane's
loader forks its workers each epoch) reads the parent pid of the orphan it already is, and waits for indices forever.
It also holds what it inherited by fork: the feeder's connections to its producer (whose end would tell the producer
and its trials that the feeder is gone) and the pipes of the feeder's output (whose end its launcher may wait for).

:class:`ExitWithFeeder` is the ``worker_init_fn`` of every DataLoader the feeder makes (a data set fed by index, its
lanes) and of a DataLoader it feeds in the loader's own order: it knows the feeder's pid from when the loader was made,
exits the worker at once if its parent is already another process, and leaves a thread that exits it as soon as that
happens later; then it runs the loader's own ``worker_init_fn``. A loader of the feeder's that keeps its workers
between epochs (``persistent_workers``) has them stopped when the feed no longer needs it (:func:`stop_workers`).
"""

import multiprocessing
import os
import threading
import time
from typing import Any, Callable, Dict, Optional

CHECK_INTERVAL_S = 0.25
"""How often a worker looks for its feeder: a killed feeder's workers are gone within about this long."""


class ExitWithFeeder:
    """A DataLoader ``worker_init_fn`` that ends the worker with the feeder of pid ``feeder_pid`` (see the module),
    then calls ``then`` (the loader's own). Picklable where ``then`` is, so spawned workers take it too."""

    def __init__(self, feeder_pid: int, then: Optional[Callable[[int], Any]] = None):
        self.feeder_pid = feeder_pid
        self.then = then

    def __call__(self, worker_id: int) -> None:
        if os.getppid() != self.feeder_pid:
            os._exit(0)
        threading.Thread(target=self._watch, name="tensorsocket-feeder-watch", daemon=True).start()
        if self.then is not None:
            self.then(worker_id)

    def _watch(self) -> None:
        while os.getppid() == self.feeder_pid:
            time.sleep(CHECK_INTERVAL_S)
        os._exit(0)


def ending_with_this_process(options: Dict[str, Any]) -> Dict[str, Any]:
    """DataLoader ``options`` whose workers (where it has any) end with this process, the feeder."""
    init = options.get("worker_init_fn")
    wrapped = _ending_init(options.get("num_workers", 0), options.get("multiprocessing_context"), init)
    return options if wrapped is init else dict(options, worker_init_fn=wrapped)


def ended_with_this_process(loader: Any) -> Any:
    """``loader`` itself, whose workers (where it is a torch DataLoader with workers of its own start) end with this
    process from now on: a loader the feeder iterates as it is given, in its own order. Its ``worker_init_fn`` is
    wrapped in place, once; a worker it already runs (``persistent_workers``) keeps the one it started with."""
    try:
        import torch.utils.data as tud
    except ImportError:
        return loader
    if isinstance(loader, tud.DataLoader) and not isinstance(loader.worker_init_fn, ExitWithFeeder):
        loader.worker_init_fn = _ending_init(loader.num_workers, loader.multiprocessing_context, loader.worker_init_fn)
    return loader


def stop_workers(loader: Any) -> None:
    """Ends now the worker processes a torch DataLoader of the feeder's keeps between epochs (``persistent_workers``),
    once the feed needs it no more. Left to the garbage collector, a loader in a reference cycle may have its queues
    closed before its own shutdown runs, which then waits 5 s for each worker to hear a message never sent."""
    iterator = getattr(loader, "_iterator", None)
    if iterator is None:
        return
    loader._iterator = None
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def _ending_init(num_workers: int, context, init: Optional[Callable[[int], Any]]):
    """The ``worker_init_fn`` that ends a loader's workers with this process and then runs ``init``: for workers it
    forks or spawns itself. A forkserver's workers are its children, not the feeder's (the forkserver ends with the
    feeder), and a loader without workers has none: for those, ``init`` itself."""
    if num_workers == 0 or _start_method(context) not in ("fork", "spawn"):
        return init
    return ExitWithFeeder(os.getpid(), init)


def _start_method(context) -> str:
    """How a DataLoader given ``multiprocessing_context`` starts its workers."""
    if isinstance(context, str):
        return context
    if context is not None:
        return context.get_start_method()
    return multiprocessing.get_start_method()
