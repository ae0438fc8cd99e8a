"""``share()`` for Ray: the trials on a host share one producer per name, whatever Ray instance runs them (needs ``ray``).

    from tensorsocket_client.ray import share
    def trainable(config):
        loader = share("cifar-train", "loaders:make_cifar", batch_size=config["batch_size"])
        for epoch in range(10):
            for images, labels in loader: ...

The first trial on a host starts the producer as :func:`tensorsocket_client.share` does, fed by a new Python (a Ray
worker's gRPC threads make forking it unsafe) that is nobody's child: Ray ends a finished or stopped trial's worker
together with the processes it started, and trials of a sweep end all the time; this producer lives by its linger
instead (``linger`` seconds after the last trial left), so a sweep leaves nothing behind. The others attach, also
trials of another sweep with a Ray instance of its own on the same host (two drivers, say), or a plain script: the
data is decoded once per host. ``stop(name)`` after ``tuner.fit()`` ends every node's producer of the name that no
other sweep uses (each sweep's trials note their sweep beside the producer: of two sweeps, the one that ends last stops
it) and no trial reads; one that trials still read ends after its linger once they left. ``per_node=True``
names each node's producer after the share and the node (``NAME-NODEID``): nodes simulated on one host
(``ray.cluster_utils.Cluster``) then keep theirs apart, as separate hosts would.

Nodes with too little CPU to decode (GPU nodes) take their batches from one node that has it, over Arrow Flight:

    upstream = serve_upstream("cifar-train", "loaders:make_cifar", flight="0.0.0.0:8815", node_id=cpu_node)
    def trainable(config):
        loader = share("cifar-train", "loaders:make_cifar", batch_size=128, upstream=upstream)

``serve_upstream`` runs the share's producer on that node (a detached actor, as above) and serves it over Flight;
with ``upstream=`` each node's actor runs a relay of it instead of a loader (``tensorsocket serve --from``): one
network stream per node, its trials reading the relay from shared memory. A trial that joins a relay mid-epoch still
gets exact epochs where the upstream can keep its boundary (docs/PROTOCOL.md, section 8), else starts at the relay's
next epoch start.
"""

import os
import signal
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence, Union

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .directory import SOCKET_FILE, directory_for, is_locked, launcher_command
from .share import (
    DEFAULT_LINGER,
    ShareFailed,
    add_user,
    attach,
    factory_path,
    fingerprint,
    log_path,
    remove_share_files,
    remove_user,
    running,
    serve,
    stop_if_idle,
)
from .share import share as _share

NAMESPACE = "tensorsocket"


def producer_name(name: str, node_id: Optional[str] = None, per_node: bool = False) -> str:
    """The name of the producer of share ``name`` for node ``node_id`` (this node by default): ``name`` itself, one per
    host, or with ``per_node`` ``NAME-NODEID``."""
    if not per_node:
        return name
    node = node_id or ray.get_runtime_context().get_node_id()
    return "%s-%s" % (name, node[:12])


@ray.remote(num_cpus=0, max_restarts=0)
class SharedProducer:
    """The producer :func:`serve_upstream` runs on one node, in this detached actor: feeds ``factory(**kwargs)`` and
    serves it over Flight until the producer's linger ran out."""

    def __init__(self, name, path, kwargs, description, linger, producer_options, env):
        os.environ.update(env)  # where producers live and which launcher starts them, as the trial sees it
        self._name = name
        self._error = None
        self._producer = None
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, args=(name, path, kwargs, description, linger,
                                                                   producer_options), daemon=True)
        self._thread.start()

    def _serve(self, *args):
        try:
            serve(*args, started=lambda p: setattr(self, "_producer", p))
        except BaseException as e:  # the loader or factory failed: trials that ask are told, then it goes
            self._error = "%s: %s" % (type(e).__name__, e)
            time.sleep(5)
        if not self._stopping:  # stopped: stop() returns, and its caller ends the actor, as Ray expects
            os._exit(0)  # its work is done: a detached actor ends itself (and Ray restarts none, max_restarts=0)

    def ready(self, timeout):
        """Waits until the producer opens its socket; raises what stopped it if it cannot."""
        return _await_socket(self._name, timeout, lambda: self._error)


    def stop(self, timeout=30.0):
        """Stops the producer now, as Ctrl-C would (its consumers are told, its files removed); the actor then ends."""
        self._stopping = True
        p = self._producer
        if p is not None and p.producer_pid > 0:
            try:
                os.kill(p.producer_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self._thread.join(timeout)
        return True


def _await_socket(name, timeout, error):
    """Waits until producer ``name`` on this node opens its socket; raises ``error()`` once that is not None."""
    d = directory_for(name)
    deadline = time.monotonic() + timeout
    while not ((d / SOCKET_FILE).exists() and is_locked(d)):
        if error() is not None:
            raise ShareFailed("the producer of share '%s' on this node could not start: %s" % (name, error()))
        if time.monotonic() > deadline:
            raise ShareFailed("the producer of share '%s' on this node did not start within %.0f s" % (name, timeout))
        time.sleep(0.05)
    return os.getpid()


@ray.remote(num_cpus=0, max_restarts=0)
class SharedRelay:
    """One node's relay of a share served by :func:`serve_upstream`: ``tensorsocket serve --from UPSTREAM`` in a
    process of its own, until its linger after the node's last trial ran out; the actor then ends."""

    def __init__(self, name, upstream, batch_size, linger, token_file, env):
        os.environ.update(env)
        self._name = name
        self._error = None
        self._proc = None
        self._stopping = False
        try:
            found = launcher_command()
        except Exception as e:  # noqa: BLE001 (a damaged bundle: its message says what to reinstall)
            self._error = str(e)
            return
        if found is None:
            self._error = ("no tensorsocket launcher on this node (install the tensorsocket wheel, put "
                           "bin/tensorsocket on PATH, or set TENSORSOCKET_LAUNCHER)")
            return
        argv, env = found
        cmd = argv + ["serve", "--name", name, "--from", upstream, "--batch-size", str(int(batch_size)), "--epochs", "0",
               "--idle-timeout-s", repr(float(linger))] + (["--from-token-file", token_file] if token_file else [])
        self._log = log_path(name)
        with open(self._log, "ab") as log:
            log.write(("--- %s: relay started by a trial's actor: %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"),
                                                                        " ".join(cmd))).encode("utf-8"))
            log.flush()
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                          env=env)
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self):
        code = self._proc.wait()
        if code != 0:
            from ._share_log import tail
            self._error = "the relay exited with status %d:\n%s" % (code, tail(self._log))
            time.sleep(5)  # trials that ask meanwhile are told why
        if not self._stopping:  # stopped: stop() returns, and its caller ends the actor
            os._exit(0)

    def ready(self, timeout):
        """Waits until the relay opens its socket; raises why it could not (its output's end) otherwise."""
        return _await_socket(self._name, timeout, lambda: self._error)

    def stop(self, timeout=30.0):
        """Stops the relay now, as Ctrl-C would; the actor then ends."""
        self._stopping = True
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        return True


def _env():
    """What a trial's environment says about where producers live and how to start them, for its actors."""
    return {k: v for k, v in os.environ.items() if k in ("TENSORSOCKET_BASE", "TENSORSOCKET_LAUNCHER", "PATH",
                                                         "PYTHONPATH", "JAVA_HOME")}


def serve_upstream(name: str, factory: Union[str, Callable[..., Any]], *, flight: str,
                   kwargs: Optional[Dict[str, Any]] = None, node_id: Optional[str] = None,
                   linger: float = DEFAULT_LINGER, token_file: Optional[str] = None, start_timeout: float = 120.0,
                   producer_options: Optional[Dict[str, Any]] = None) -> str:
    """Runs share ``name``'s producer on node ``node_id`` (default: this one) in a detached actor, served over Arrow
    Flight at ``flight`` (``HOST:PORT``; a token file is needed unless HOST is loopback), for nodes that read it through
    ``share(..., upstream=...)``. It stays while relays read and ``linger`` seconds after the last left; ``stop(name)``
    ends it. Returns its address, ``grpc://HOST:PORT/NAME`` (HOST the node's address where ``flight`` binds all)."""
    path = factory_path(factory)
    node = node_id or ray.get_runtime_context().get_node_id()
    options = dict(producer_options or {}, flight=flight)
    if token_file:
        options["flight_token_file"] = token_file
    actor = SharedProducer.options(
        name="upstream:" + name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
    ).remote(name, path, kwargs or {}, fingerprint(path, kwargs), float(linger), options, _env())
    ray.get(actor.ready.remote(float(start_timeout)))
    host, _, port = flight.rpartition(":")
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = next(n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == node)
    return "grpc://%s:%s/%s" % (host, port, name)


def share(name: str, factory: Union[str, Callable[..., Any]], batch_size: int, *,
          kwargs: Optional[Dict[str, Any]] = None, names: Optional[Sequence[str]] = None,
          linger: float = DEFAULT_LINGER, start_timeout: float = 120.0,
          producer_options: Optional[Dict[str, Any]] = None, upstream: Optional[str] = None,
          upstream_token_file: Optional[str] = None, per_node: bool = False, cache_mb: Optional[float] = None,
          augment: Any = None, **consumer_options: Any):
    """As :func:`tensorsocket_client.share`, for a trial run by Ray: one producer per host and name (``per_node=True``:
    per Ray node), started by the first trial as a process no Ray worker owns. With ``upstream`` (what
    :func:`serve_upstream` returned) the producer is a relay of it, whose batches of ``batch_size`` (the first trial's on
    the node) cross the network once for all of the node's trials; it lives in a detached actor on the node.
    ``cache_mb`` as share()'s, for the producer this host starts (a relay decodes nothing: its upstream does);
    ``augment`` as share()'s, applied in this trial's process."""
    node = ray.get_runtime_context().get_node_id()
    local = producer_name(name, node, per_node)
    if upstream is None:
        add_user(local, _sweep())  # its stop() ends the producer only once every sweep using it said it is done
        return _share(local, factory, batch_size, kwargs=kwargs, names=names, linger=linger,
                      start_timeout=start_timeout, producer_options=producer_options, start_method="spawn",
                      cache_mb=cache_mb, augment=augment, **consumer_options)
    path = factory_path(factory)
    wanted = fingerprint(path, kwargs)
    env = _env()
    deadline = time.monotonic() + float(start_timeout)

    def ensure():
        if running(local):
            return  # this host's relay of the name, whichever Ray instance started it
        placed = dict(name="share:" + local, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
                      scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
        actor = SharedRelay.options(**placed).remote(local, upstream, batch_size, float(linger), upstream_token_file,
                                                     env)
        try:
            ray.get(actor.ready.remote(max(1.0, deadline - time.monotonic())))
        except ray.exceptions.RayActorError:
            # It was ending (its linger ran out) as this trial found it: a new one starts on the next attempt.
            time.sleep(0.2)

    return attach(local, path, wanted, batch_size, names, ensure, deadline, consumer_options, augment)


def _sweep() -> str:
    """This sweep: its Ray cluster (GCS address) and job, as its trials and its driver see them."""
    context = ray.get_runtime_context()
    return "ray %s job %s" % (context.gcs_address, context.get_job_id())


@ray.remote(num_cpus=0)
def _stop_idle(names, sweep, env):
    """On one node: notes that ``sweep`` is done with each of ``names``, and stops each that runs there, that no other
    sweep uses and that no trial reads; returns how many it stopped."""
    os.environ.update(env)
    stopped = 0
    for n in names:
        others = remove_user(n, sweep)
        if others == 0 and running(n) and stop_if_idle(n):
            stopped += 1
        if others == 0 and not running(n):
            remove_share_files(n)  # what a producer that ended meanwhile left: its users' note, say
    return stopped


def stop(name: str) -> int:
    """Ends share ``name``'s producers (e.g. after ``tuner.fit()``): on every node the relays and then the upstream if
    :func:`serve_upstream` started one, and each node's producer of the name that no other sweep uses and no trial reads
    now (of two sweeps sharing one, the one that ends last stops it; one that trials still read ends after its linger,
    once they left); returns how many it ended."""
    stopped = 0
    nodes = [node["NodeID"] for node in ray.nodes() if node.get("Alive")]
    actors = ["share:" + producer_name(name, node, per_node=True) for node in nodes]
    for actor_name in actors + ["share:" + name, "upstream:" + name]:
        try:
            actor = ray.get_actor(actor_name, namespace=NAMESPACE)
        except ValueError:
            continue
        try:
            ray.get(actor.stop.remote(), timeout=60)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass  # it ended while stopping (its work done), or hangs: then it is killed
        ray.kill(actor)
        stopped += 1
    env = _env()
    tasks = [_stop_idle.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True)).remote(
        [name, producer_name(name, node, per_node=True)], _sweep(), env) for node in nodes]
    for count in ray.get(tasks, timeout=120):
        stopped += count
    return stopped
