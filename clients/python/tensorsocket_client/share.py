"""One line in a training script shares one loader among every trial of a sweep on this host:

    from tensorsocket_client import share
    loader = share("cifar-train", make_loader, batch_size=128)   # make_loader: importable, returns a DataLoader
    for epoch in range(epochs):
        for images, labels in loader: ...

Every trial calls the same line. The first caller on the host starts the producer and its feeder as a process of
their own (in a session of their own, so a trial that ends or is stopped early does not take them along); the
others attach; callers racing at the same instant start exactly one (a lock file beside the producers' directories
decides who). The producer stays while consumers are attached and ``linger`` seconds after the last one left
(default 60 s: trials started one after another reuse it), then stops. The factory is named by import path
(``module:function``, or the function itself if it is defined at a module's top level) with JSON-able keyword
arguments, so that the producer's process can build the same loader; a lambda, a closure or a function of the
script being run (``__main__``) is refused with a message. The running producer's source description carries a
fingerprint of the factory's path and arguments: a trial whose factory or arguments differ is refused, told how.

A DataLoader over a map-style data set is fed by index, so trials that join mid-epoch get exact epochs; ranks of a
data-parallel trial pass ``job=`` (rank and world size from torchrun's RANK and WORLD_SIZE).
"""

import fcntl
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Union

from . import _share_log, _share_start
from ._decoded import unmarked
from ._feeder_link import ProducerEnded
from .directory import SOCKET_FILE, base_directory, check_name, directory_for, is_locked
from .errors import ProducerGone, ProducerNotFound, TensorSocketError

if TYPE_CHECKING:
    from .augment import SampleAugment  # imports torch: only for the annotations

DEFAULT_LINGER = 60.0
PREFIX = "share:"


class ShareMismatch(TensorSocketError, ValueError):
    """The producer of that name serves another factory or other arguments than this trial asks for."""


class ShareFailed(TensorSocketError):
    """The producer this trial started for the share could not start (its factory or loader failed)."""


def factory_path(factory: Union[str, Callable[..., Any]]) -> str:
    """``module:function`` of ``factory``; ValueError for what another process cannot import by that name."""
    if isinstance(factory, str):
        module, sep, attr = factory.partition(":")
        if not sep or not module or not attr:
            raise ValueError("a factory path is 'module:function' (e.g. 'loaders:make_cifar'), not %r" % factory)
        return factory
    qualname = getattr(factory, "__qualname__", None)
    module = getattr(factory, "__module__", None)
    if not callable(factory) or qualname is None or module is None:
        raise ValueError("share() needs a factory: a module-level function returning the DataLoader, or its path "
                         "'module:function'; got %r" % (factory,))
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError("share() cannot use %s (a lambda or a function defined inside another): the producer runs in "
                         "a process of its own, which imports the factory by name. Define it at the top level of a "
                         "module and pass it, or its path 'module:function'" % qualname)
    if module == "__main__":
        script = getattr(sys.modules.get("__main__"), "__file__", None) or "the script"
        stem = os.path.splitext(os.path.basename(script))[0] if script != "the script" else "yourscript"
        raise ValueError("share() cannot use %s, a function of %s being run (__main__): the producer's process would "
                         "have to run the script to import it. Move it to a module of its own (say loaders.py) and "
                         "pass it from there, or guard the script's training with if __name__ == '__main__': and pass "
                         "'%s:%s'" % (qualname, script, stem, qualname))
    return "%s:%s" % (module, qualname)


def fingerprint(path: str, kwargs: Optional[Dict[str, Any]]) -> str:
    """The source description of a shared producer: ``share:PATH ARGS #DIGEST`` (ARGS canonical JSON)."""
    args = _canonical(kwargs or {})
    digest = hashlib.sha256((path + " " + args).encode("utf-8")).hexdigest()[:16]
    return "%s%s %s #%s" % (PREFIX, path, args, digest)


def _canonical(kwargs: Dict[str, Any]) -> str:
    try:
        return json.dumps(kwargs, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError("share()'s factory arguments must be JSON-able (numbers, strings, lists, dicts), so that the "
                         "producer's process gets the same ones: %s" % e) from None


def _parse(description: str):
    """(path, kwargs) of a shared producer's description, or None for a producer that is not a share's."""
    if not description.startswith(PREFIX):
        return None
    body = description[len(PREFIX):]
    path, _, rest = body.partition(" ")
    args, _, _ = rest.rpartition(" #")
    try:
        return path, json.loads(args)
    except ValueError:
        return path, None


def difference(running: str, wanted: str) -> Optional[str]:
    """How the factory of ``running`` (a description) differs from ``wanted``'s, or None if they are the same."""
    if running == wanted:
        return None
    r, w = _parse(running), _parse(wanted)
    if r is None:
        return "it serves '%s', which no share() started" % running
    if r[0] != w[0]:
        return "its factory is %s, this trial's is %s" % (r[0], w[0])
    ra, wa = r[1] or {}, w[1] or {}
    parts = []
    for key in sorted(set(ra) | set(wa)):
        if key not in wa:
            parts.append("%s=%s (not given here)" % (key, json.dumps(ra[key])))
        elif key not in ra:
            parts.append("%s not given there (here %s)" % (key, json.dumps(wa[key])))
        elif ra[key] != wa[key]:
            parts.append("%s=%s there, %s here" % (key, json.dumps(ra[key]), json.dumps(wa[key])))
    return "its arguments differ: " + (", ".join(parts) if parts else "%s vs %s" % (running, wanted))


def share(name: str, factory: Union[str, Callable[..., Any]], batch_size: int, *,
          kwargs: Optional[Dict[str, Any]] = None, names: Optional[Sequence[str]] = None, linger: float = DEFAULT_LINGER,
          start_timeout: float = 120.0, producer_options: Optional[Dict[str, Any]] = None,
          start_method: Optional[str] = None, cache_mb: Optional[float] = None, augment: Optional["SampleAugment"] = None,
          seed: Optional[int] = None, **consumer_options: Any):
    """A torch ``DataLoader`` of the shared producer ``name`` at ``batch_size``, starting the producer (running
    ``factory(**kwargs)`` in a process of its own) if none runs on this host. Each iteration is one epoch; batches are
    tuples of tensors in the order the factory's loader yields them (``names`` picks and orders them). ``linger``:
    seconds the producer stays after its last consumer left. ``producer_options``: as TensorProducer's (e.g.
    ``rubber_band``, ``arena_mb``). ``start_method``: how a producer this trial starts is fed, ``"fork"`` (a child
    forked from this process, its imports done: the fast way) or ``"spawn"`` (a new Python); by default fork, unless
    TENSORSOCKET_SHARE_START says otherwise or this process initialised CUDA or Ray (see ``_share_start``).
    ``cache_mb``: the producer this trial starts keeps the factory's decoded samples across epochs in up to that many
    MiB (``TensorProducer``'s ``cache_mb``); it is not part of what the share serves, so trials that give it or not
    read the same producer. ``augment``: this trial's own augmentation (a :class:`SampleAugment` of the transform it
    would give its private data set): the producer serves the factory's data set's samples with its transform off
    (the decoded images, whatever their sizes), and this trial applies its transform to each, seeded by (seed, this
    trial's epoch, sample id), in worker processes of its own ahead of the loop (as many as the factory's loader has,
    by default): trials that augment differently share the decoding, and each equals its private pipeline
    ``SampleAugment.over(dataset)`` (see :mod:`tensorsocket_client.augment`). Trials with and without ``augment``
    read different producers (a mismatch names it). ``seed``: the producer this trial starts draws its shuffles from
    it, so shared runs repeat (default: a new seed per producer). Other
    keyword arguments go to the TensorConsumer (``job=``, ``drop_last=``, ``connect_timeout=``...). Raises
    ShareMismatch if the producer of that name serves another factory or other arguments, ShareFailed if the producer
    started for it could not start (with its output's end)."""
    check_name(name)
    path = factory_path(factory)
    wanted = fingerprint(path, kwargs)
    if float(linger) <= 0:
        raise ValueError("linger must be positive (seconds the producer stays after its last consumer), got %r" % linger)
    deadline = time.monotonic() + float(start_timeout)

    if start_method not in (None, "fork", "spawn"):
        raise ValueError("start_method is 'fork', 'spawn' or None (choose), got %r" % (start_method,))

    options = dict(producer_options or {})
    if cache_mb is not None:
        options["cache_mb"] = cache_mb
    if seed is not None:
        options["seed"] = int(seed)
    if augment is not None:
        options["decoded"] = True

    def ensure():
        _ensure_started(name, path, kwargs or {}, wanted, float(linger), options, deadline, start_method)

    return attach(name, path, wanted, batch_size, names, ensure, deadline, consumer_options, augment)


def attach(name, path, wanted, batch_size, names, ensure, deadline, consumer_options, augment=None):
    """Joins the shared producer ``name`` once ``ensure()`` saw it started, checks it serves ``wanted``, and returns
    the DataLoader over it (what ``share()`` and its Ray variant return)."""
    from .consumer import TensorConsumer
    from .torch_data import SharedLoader, TensorSocketDataset

    consumer = None
    for attempt in range(3):
        ensure()
        try:
            consumer = TensorConsumer(name, batch_size=batch_size, **consumer_options)
            break
        except (ProducerGone, ProducerNotFound):
            if attempt == 2 or time.monotonic() > deadline:
                raise  # it stopped (its linger ran out) between the check and the join, three times over
    served, workers = unmarked(consumer.source_description)
    why = difference(served, wanted)
    if why is None and (workers is None) != (augment is None):
        why = ("it serves the factory's samples decoded, for trials that give augment=, and this trial gives none"
               if augment is None else
               "it serves the factory's loader's batches as made (started by a trial without augment=), and this "
               "trial augments the decoded samples itself (augment=)")
    if why is not None:
        consumer.close()
        raise ShareMismatch("producer '%s' on this host serves another loader than this trial asks for (%s): %s. "
                            "Give this trial's share another name, or the same factory and arguments"
                            % (name, path, why))
    if augment is not None:  # the trial's batches are its augmented samples' fields, as its private loader's
        dataset = TensorSocketDataset(name, batch_size, consumer=consumer, augment=augment,
                                      augment_workers=workers, **consumer_options)
        return SharedLoader(dataset)
    order = tuple(names) if names is not None else tuple(t[0] for t in consumer.tensors)
    dataset = TensorSocketDataset(name, batch_size, names=order, consumer=consumer, **consumer_options)
    return SharedLoader(dataset)


def _lock_path(name: str):
    """The share's lock file, its base directory made first (for a trial about to take the lock)."""
    base = base_directory()
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return _lock_file(name)


def _lock_file(name: str):
    """Where the share's lock file is; makes nothing."""
    return base_directory() / (".%s.share.lock" % name)


def log_path(name: str):
    """Where the output of the producer a share started goes."""
    return base_directory() / (".%s.share.log" % name)


def running(name: str) -> bool:
    """Whether producer ``name`` runs on this host and takes consumers (its socket is open, its lock held)."""
    d = directory_for(name)
    return (d / SOCKET_FILE).exists() and is_locked(d)


def start_lock(name: str, deadline: float) -> int:
    """The one right to start producer ``name`` now (a descriptor to close when it serves; see _take_start_lock)."""
    return _take_start_lock(name, deadline)


def _users_path(name: str):
    return base_directory() / (".%s.share.users" % name)


def add_user(name: str, who: str, timeout: float = 60.0) -> None:
    """Notes that ``who`` (a Ray sweep) uses share ``name`` on this host, until it says otherwise (``remove_user``)."""
    fd = _take_start_lock(name, time.monotonic() + timeout)
    try:
        users = _read_users(name)
        if who not in users:
            with open(_users_path(name), "a", encoding="utf-8") as f:
                f.write(who + "\n")
    finally:
        os.close(fd)


def remove_user(name: str, who: str, timeout: float = 60.0) -> int:
    """Notes that ``who`` is done with share ``name``; returns how many users it still has."""
    if not _users_path(name).exists():
        return 0  # nobody noted (a name no trial of this host used): nothing to take, no file to make
    fd = _take_start_lock(name, time.monotonic() + timeout)
    try:
        users = [u for u in _read_users(name) if u != who]
        path = _users_path(name)
        if users:
            path.write_text("".join(u + "\n" for u in users), encoding="utf-8")
        else:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        return len(users)
    finally:
        os.close(fd)


def _read_users(name: str):
    try:
        return [u for u in _users_path(name).read_text(encoding="utf-8").splitlines() if u]
    except FileNotFoundError:
        return []


def stop_if_idle(name: str, timeout: float = 30.0) -> bool:
    """Stops the shared producer ``name`` on this host now if no consumer reads it (as its linger's end would, leaving
    nothing behind), and says whether it did; one that trials (of another sweep, say) still read ends after its linger
    once they left."""
    from ._status import query
    status = query(name, timeout=5.0)
    if status is None or status.consumers_attached > 0:
        return False
    try:
        os.kill(status.producer_pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    d = directory_for(name)
    deadline = time.monotonic() + timeout
    while is_locked(d) and time.monotonic() < deadline:
        time.sleep(0.05)
    _remove_share_files(name)
    return True


def _take_start_lock(name, deadline) -> int:
    """The lock file's descriptor, flock-ed: the one right to start producer ``name`` now. The file is removed when
    the producer it started ends cleanly (see _remove_share_files), so a lock taken on a file that was removed
    meanwhile is let go and taken again on the file the path names now."""
    lock = _lock_path(name)
    while True:
        fd = os.open(str(lock), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise ShareFailed("another trial has been starting producer '%s' for longer than "
                                          "start_timeout; its output: %s" % (name, log_path(name))) from None
                    time.sleep(0.05)
            try:
                same = os.stat(str(lock)).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)


def remove_share_files(name) -> None:
    """Removes the share's lock, log and note of users where no producer of it runs or starts (see below)."""
    _remove_share_files(name)


def _remove_share_files(name) -> None:
    """Removes the share's lock file and log (the end of a producer that ran cleanly leaves nothing behind), unless a
    trial is starting the next producer of the name or one runs: then both are still in use. It makes nothing: a base
    directory removed meanwhile stays removed."""
    lock = _lock_file(name)
    try:
        fd = os.open(str(lock), os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return
    try:
        if not is_locked(directory_for(name)):
            for f in (log_path(name), _users_path(name), lock):
                try:
                    os.unlink(str(f))
                except FileNotFoundError:
                    pass
    finally:
        os.close(fd)


def _ensure_started(name, path, kwargs, description, linger, producer_options, deadline, start_method=None):
    """Starts the shared producer unless it runs; one caller at a time (a lock file decides), bounded by deadline."""
    fd = _take_start_lock(name, deadline)
    try:
        d = directory_for(name)
        if is_locked(d):
            return  # running (or starting: the consumer's join waits for it)
        short = _share_log.space_still_short(log_path(name), base_directory())
        if short is not None:  # every trial of a sweep would start it, to fail the same way
            raise ShareFailed("the producer for share '%s' (%s) cannot start: %s" % (name, path, short))
        proc_log = log_path(name)
        started = _share_start.start(name, path, kwargs, description, linger, producer_options, proc_log,
                                     lambda: serve(name, path, kwargs, description, linger, producer_options),
                                     start_method)
        while not (d / SOCKET_FILE).exists() or not is_locked(d):
            if started.poll() is not None:
                code = started.returncode
                how = ("ended before this trial could attach" if code == 0
                       else "was killed before it served" if code == -1
                       else "failed (exit status %d) before it served" % code)
                raise ShareFailed("the producer started for share '%s' (%s) %s; its output (%s) ends:\n%s"
                                  % (name, path, how, proc_log, _share_log.tail(proc_log)))
            if time.monotonic() > deadline:
                raise ShareFailed("the producer started for share '%s' (%s) did not open its socket within "
                                  "start_timeout; its output so far:\n%s" % (name, path, _share_log.tail(proc_log)))
            time.sleep(0.01)  # this trial's first batch waits behind it: look often, it costs next to nothing
        started.close()
    finally:
        os.close(fd)  # releases the lock


def _name_this_process(name: str) -> None:
    """Names the share's feeder for what it is, not for the trial it was forked from: in the producer's log and errors
    (the feeder's command line: ``tensorsocket-share-feeder NAME``), in ``ps``/``top`` (its name, at most 15
    characters) and in ``ps aux``/``top -c`` (its command line), which its DataLoader workers inherit."""
    sys.argv = ["tensorsocket-share-feeder", name]
    try:
        with open("/proc/self/comm", "w", encoding="utf-8") as f:
            f.write(("ts-share-" + name)[:15])
    except OSError:
        return  # not Linux: only the command line the producer is told
    _retitle(" ".join(sys.argv))


def _retitle(title: str) -> None:
    """Writes ``title`` over this process's command line as ``/proc/self/cmdline`` shows it: into the memory the
    kernel reads it from (``arg_start`` to ``arg_end``, fields 48 and 49 of ``/proc/self/stat``: the argv strings the
    process started with, which CPython has copied), cut to fit and the rest zeroed. The memory is this process's own
    (a forked copy of the trial's). Where the figures are missing (kernels before 3.5), nothing."""
    import ctypes
    try:
        with open("/proc/self/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # fields[0] is field 3
    except (OSError, IndexError, ValueError):
        return
    size = end - start
    if size < 2:
        return
    data = title.encode("utf-8", "replace")[:size - 1]
    ctypes.memmove(start, data + b"\0" * (size - len(data)), size)


def serve(name: str, path: str, kwargs: Dict[str, Any], description: str, linger: float,
          producer_options: Dict[str, Any], started: Optional[Callable[[Any], None]] = None) -> int:
    """The shared producer's process: builds the loader and feeds it, epoch after epoch, until the producer stops
    (``linger`` seconds after its last consumer left). ``started`` is given the TensorProducer feeding it."""
    import importlib

    from ._producer_process import serve_args, start_producer, stop_now
    from .feeder import TensorProducer

    _name_this_process(name)
    options = dict(producer_options)
    options.setdefault("idle_timeout", linger)
    # The feeder's, not its producer's options.
    feeding = {k: options.pop(k) for k in ("cache_mb", "decoded", "decoded_bytes", "seed") if k in options}
    # The share's log says what the feeder notes (per epoch, what a decoded-sample cache held and did).
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("tensorsocket_client").setLevel(logging.INFO)
    # The producer's JVM starts first, and starts while the factory builds the loader.
    process, why = start_producer(name, serve_args(options))
    try:
        module, _, attr = path.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        loader = obj(**kwargs)
        producer = TensorProducer(name, loader, description=description, **feeding, **options)
    except BaseException:
        stop_now(process)
        raise
    producer.adopt_producer(process, why)
    ended = False
    if started is not None:
        started(producer)
    try:
        while True:
            for _ in producer:
                pass
    except ProducerEnded as e:
        # The normal end: its linger ran out with no consumer attached. Anything else is a failure, said as one.
        print("share '%s': %s" % (name, e), flush=True)
        ended = True
    finally:
        producer.close()
    if ended:
        try:
            producer.wait_producer(30)  # its lock goes with its process
        except subprocess.TimeoutExpired:
            return 0  # still exiting: its files stay, as after any producer that did not end cleanly
        _remove_share_files(name)
    return 0
