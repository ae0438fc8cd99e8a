"""The feeder's lane connections (docs/PROTOCOL.md, section 9, types 24 to 26): where a feeder that loads a map-style
data set by index loads the batches of the producer's lanes, so that a trial that falls behind reads at its own pace
while the others read on.

Each connection has a thread of its own and a DataLoader of its own (the feeder's loader's settings, its own worker
processes). It waits for LANE_START: the lane's arena, then the ids to load (an ORDER); it loads them in batches of the
batch size, one claim at a time, into the lane's arena, and ends with FEEDER_EPOCH_END, as the main connection does an
epoch. LANE_STOP (the lane's consumer caught up, left or failed) drops what it holds; it echoes it and waits for the
next lane. A loader that raises fails that lane only: the producer tells the lane's consumer, with the exception.

    producer                                feeder, one thread per lane connection
      LANE_START lane, arena  ───────────►  maps the lane's arena (again where it is another file)
      ORDER epoch, ids        ───────────►  its DataLoader loads the ids
                              ◄───────────  CLAIM, PUBLISH ... FEEDER_EPOCH_END
      LANE_STOP lane          ───────────►  drops the epoch's rest
                              ◄───────────  LANE_STOP lane
"""

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np

from . import wire
from ._batch_tensors import _batch_problem, _named
from ._feeder_arena import FeederArena, Region
from ._feeder_link import FeederLink
from ._map_style import LaneLoader
from .errors import TensorSocketError

_log = logging.getLogger("tensorsocket_client")


class _LaneStopped(Exception):
    """The producer stopped the lane's work (LANE_STOP, echoed) or failed it (ERROR): nothing more of it is sent."""


class LaneFeeders:
    """The ``count`` lane connections of the feeder of producer ``name`` (feeder socket ``path``): each loads with a
    loader of its own, ``make_loader()`` (a ``_map_style.LaneLoader``); ``regions`` and ``batch_size`` say where a
    batch's tensors lie in a slot, ``names`` and ``spec`` what the loader yields (as the main connection declared)."""

    def __init__(self, name: str, path: Path, count: int, make_loader: Callable[[], LaneLoader],
                 names: Optional[Sequence[str]], spec, regions: List[Region], batch_size: int,
                 describe_failure: Callable[[BaseException, int, int], str]):
        self.name = name
        self._lanes = []
        for i in range(count):
            lane = _LaneConnection(self, path, i + 1, make_loader, names, spec, regions, batch_size, describe_failure)
            self._lanes.append(lane)

    def start(self) -> None:
        for lane in self._lanes:
            lane.start()

    def close(self) -> None:
        """Closes every lane connection; their threads end at their next read."""
        for lane in self._lanes:
            lane.close()
        for lane in self._lanes:
            lane.join(5.0)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the producer closed every lane connection (it needs no more lanes loaded), at most
        ``timeout`` seconds; whether they are all closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for lane in self._lanes:
            while lane.is_alive():
                left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
                if left <= 0:
                    return False
                lane.join(left)  # in slices: Ctrl-C gets through
        return True


class _LaneConnection(threading.Thread):
    def __init__(self, owner: LaneFeeders, path: Path, number: int, make_loader, names, spec, regions, batch_size,
                 describe_failure):
        super().__init__(name="tensorsocket-lane-feeder-%d-%s" % (number, owner.name), daemon=True)
        self._owner = owner
        self._path = path
        self._number = number
        self._make_loader = make_loader
        self._names = names
        self._spec = spec
        self._regions = regions
        self._batch_size = batch_size
        self._describe_failure = describe_failure
        self._link: Optional[FeederLink] = None
        self._closed = False
        self._arena: Optional[FeederArena] = None
        self._loader: Optional[LaneLoader] = None

    @property
    def _conn(self) -> FeederLink:
        """The lane connection, once made (run's first step)."""
        assert self._link is not None
        return self._link

    def close(self) -> None:
        self._closed = True
        link = self._link
        if link is not None:
            link.close()

    def run(self) -> None:
        try:
            self._link = FeederLink(self._path, 10.0)
            if self._closed:
                self._link.close()
                return
            self._link.sock.settimeout(None)  # a lane may come at any time, or never; close() ends the wait
            self._conn.send(wire.FeederLaneHello(os.getpid()))
            while not self._closed:
                m = self._conn.read_any()
                if isinstance(m, wire.LaneStart):
                    self._serve(m)
                elif isinstance(m, wire.LaneStop):
                    self._conn.send(m)
                elif isinstance(m, wire.Error):
                    # about the lane just failed (LANE_STOP follows), or the producer refusing this connection
                    _log.info("producer '%s', lane connection %d: %s", self._owner.name, self._number, m.message)
                else:
                    raise TensorSocketError("the producer sent %s on a lane connection" % type(m).__name__)
        except (OSError, EOFError, TensorSocketError) as e:
            if not self._closed:
                _log.debug("producer '%s', lane connection %d ended: %s", self._owner.name, self._number, e)
        finally:
            self._unmap()
            if self._link is not None:
                self._link.close()
            if self._loader is not None:
                self._loader.close()  # its persistent workers, if any

    # ------------------------------------------------------------------------------------------ a lane's epoch

    def _serve(self, start: "wire.LaneStart") -> None:
        ids: List[int] = []
        epoch, total = -1, None
        while total is None or len(ids) < total:
            m = self._conn.read_any()
            if isinstance(m, wire.LaneStop):
                self._conn.send(m)
                return
            if not isinstance(m, wire.EpochOrder) or m.first != len(ids):
                raise TensorSocketError("the producer sent %s where lane %d's order was due" % (m, start.lane))
            epoch, total = m.epoch, m.total
            ids.extend(m.ids)
        self._map_arena(start.arena_path)
        try:
            self._load(start.lane, epoch, ids)
        except _LaneStopped:
            pass

    def _load(self, lane: int, epoch: int, ids: List[int]) -> None:
        if self._loader is None:
            self._loader = self._make_loader()
        samples = 0
        index = 0
        batches = iter(self._loader(ids))
        try:
            while True:
                try:
                    batch = next(batches, None)
                    if batch is None:
                        break
                    tensors = _named(batch, self._names)
                    problem = _batch_problem(tensors, self._spec, len(tensors[0][1]), epoch)
                    if problem is not None:
                        raise ValueError(problem)
                except (KeyboardInterrupt, GeneratorExit):
                    raise
                except Exception as e:
                    what = self._describe_failure(e, epoch, index) + " (loading lane %d)" % lane
                    self._conn.send(wire.Error(wire.LOADER_FAILED, what[:2000]))
                    self._await_stop(lane)
                    return
                n = len(tensors[0][1])
                self._conn.send(wire.Claim())
                grant = self._answer(wire.SlotGrant, lane)
                assert self._arena is not None
                for view, (_, a) in zip(self._arena.views(grant.offset), tensors):
                    np.copyto(view[:n], a, casting="no")
                self._conn.send(wire.Publish(grant.seq, n))
                samples += n
                index += 1
            self._conn.send(wire.FeederEpochEnd(epoch, samples))
            self._answer(wire.FeederEpochEnd, lane)
        finally:
            del batches  # its workers stop (unless the loader keeps them: persistent_workers)

    def _answer(self, expected, lane: int):
        """The producer's answer of type ``expected``; LANE_STOP (echoed) or ERROR raise _LaneStopped."""
        m = self._conn.read_any()
        if isinstance(m, expected):
            return m
        if isinstance(m, wire.LaneStop):
            self._conn.send(m)
            raise _LaneStopped()
        if isinstance(m, wire.Error):
            _log.info("producer '%s' stopped lane %d: %s", self._owner.name, lane, m.message)
            self._await_stop(lane)
            raise _LaneStopped()
        raise TensorSocketError("the producer sent %s on lane %d's connection where %s was due"
                                % (type(m).__name__, lane, expected.__name__))

    def _await_stop(self, lane: int) -> None:
        """After an ERROR (this side's or the producer's): the LANE_STOP that frees the connection, echoed."""
        while True:
            m = self._conn.read_any()
            if isinstance(m, wire.LaneStop):
                self._conn.send(m)
                return

    # ------------------------------------------------------------------------------------------ the lane's arena

    def _map_arena(self, path: str) -> None:
        """Maps the lane's arena file, once per file: a later lane of the same number has a new one."""
        a = self._arena
        if a is not None and a.path == path and a.inode == os.stat(path).st_ino:
            return
        self._unmap()
        self._arena = FeederArena(path, self._regions, self._batch_size)

    def _unmap(self) -> None:
        if self._arena is not None:
            self._arena.close()
            self._arena = None
