"""``share()`` for Ray: each node's trials share one producer on that node (needs ``ray``).

    from tensorsocket_client.ray import share
    def trainable(config):
        loader = share("cifar-train", "loaders:make_cifar", batch_size=config["batch_size"])
        for epoch in range(10):
            for images, labels in loader: ...

The producer of each node runs in a detached, named Ray actor placed on that node (created by the first trial there,
found by the others: ``get_if_exists``), not in a trial: Ray ends a finished or stopped trial's worker together with
the processes it started, and trials of a sweep end all the time. The actor reserves no CPU of the trials' (its loader
runs beside them, as a DataLoader's workers would). It builds the factory's loader and feeds the node's producer; the
producer stays while trials read and ``linger`` seconds after the last one left, then the actor exits, so a sweep
leaves nothing behind; ``stop(name)`` ends every node's at once. Each node's producer is named after the share and
the node (``NAME-NODEID``), so nodes that share a host, as in ``ray.cluster_utils.Cluster``, keep theirs apart.
"""

import os
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence, Union

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .share import DEFAULT_LINGER, ShareFailed, attach, factory_path, fingerprint, serve

NAMESPACE = "tensorsocket"


def producer_name(name: str, node_id: Optional[str] = None) -> str:
    """The name of the producer of share ``name`` on node ``node_id`` (this node by default)."""
    node = node_id or ray.get_runtime_context().get_node_id()
    return "%s-%s" % (name, node[:12])


@ray.remote(num_cpus=0, max_restarts=0)
class SharedProducer:
    """One node's producer of one share: feeds ``factory(**kwargs)`` until the producer's linger ran out."""

    def __init__(self, name, path, kwargs, description, linger, producer_options, env):
        os.environ.update(env)  # where producers live and which launcher starts them, as the trial sees it
        self._name = name
        self._error = None
        self._producer = None
        self._thread = threading.Thread(target=self._serve, args=(name, path, kwargs, description, linger,
                                                                   producer_options), daemon=True)
        self._thread.start()

    def _serve(self, *args):
        try:
            serve(*args, started=lambda p: setattr(self, "_producer", p))
        except BaseException as e:  # the loader or factory failed: trials that ask are told, then it goes
            self._error = "%s: %s" % (type(e).__name__, e)
            time.sleep(5)
        os._exit(0)  # its work is done: a detached actor ends itself (and Ray restarts none, max_restarts=0)

    def ready(self, timeout):
        """Waits until the producer opens its socket; raises what stopped it if it cannot."""
        from .directory import SOCKET_FILE, directory_for, is_locked
        d = directory_for(self._name)
        deadline = time.monotonic() + timeout
        while not ((d / SOCKET_FILE).exists() and is_locked(d)):
            if self._error is not None:
                raise ShareFailed("the producer of share '%s' on this node could not start: %s"
                                         % (self._name, self._error))
            if time.monotonic() > deadline:
                raise ShareFailed("the producer of share '%s' on this node did not start within %.0f s"
                                         % (self._name, timeout))
            time.sleep(0.05)
        return os.getpid()


    def stop(self, timeout=30.0):
        """Stops the producer now, as Ctrl-C would (its consumers are told, its files removed); the actor then ends."""
        import signal
        p = self._producer
        if p is not None and p.producer_pid > 0:
            try:
                os.kill(p.producer_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self._thread.join(timeout)
        return True


def share(name: str, factory: Union[str, Callable[..., Any]], batch_size: int, *,
          kwargs: Optional[Dict[str, Any]] = None, names: Optional[Sequence[str]] = None,
          linger: float = DEFAULT_LINGER, start_timeout: float = 120.0,
          producer_options: Optional[Dict[str, Any]] = None, **consumer_options: Any):
    """As :func:`tensorsocket_client.share`, the producer living in a detached actor on this trial's node."""
    path = factory_path(factory)
    wanted = fingerprint(path, kwargs)
    node = ray.get_runtime_context().get_node_id()
    local = producer_name(name, node)
    env = {k: v for k, v in os.environ.items() if k in ("TENSORSOCKET_BASE", "TENSORSOCKET_LAUNCHER", "PATH",
                                                         "PYTHONPATH", "JAVA_HOME")}
    deadline = time.monotonic() + float(start_timeout)

    def ensure():
        actor = SharedProducer.options(
            name="share:" + local, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        ).remote(local, path, kwargs or {}, wanted, float(linger), producer_options or {}, env)
        try:
            ray.get(actor.ready.remote(max(1.0, deadline - time.monotonic())))
        except ray.exceptions.RayActorError:
            # It was ending (its linger ran out) as this trial found it: a new one starts on the next attempt.
            time.sleep(0.2)

    return attach(local, path, wanted, batch_size, names, ensure, deadline, consumer_options)


def stop(name: str) -> int:
    """Ends the producer of share ``name`` on every node now (e.g. after ``tuner.fit()``); returns how many ran."""
    stopped = 0
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        try:
            actor = ray.get_actor("share:" + producer_name(name, node["NodeID"]), namespace=NAMESPACE)
        except ValueError:
            continue
        try:
            ray.get(actor.stop.remote(), timeout=60)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass  # it ended while stopping (its work done), or hangs: then it is killed
        ray.kill(actor)
        stopped += 1
    return stopped
