"""The share's log, ``.NAME.share.log`` beside the producers' directories: the output of every producer started for
share ``NAME``, each start headed by one line (``--- TIME: started by pid PID: COMMAND``), kept while the producer
runs and after it failed, removed when it ends cleanly. A failing start shows its end; a start that failed for lack
of shared memory tells the next trials not to start the same producer again until there is room."""

import os
import re
import time
from pathlib import Path
from typing import List, Optional

_START = "--- "
_STARTED_BY = ": started by pid "
# Java's SharedMemoryFullException says it so: "not enough shared memory in DIR: the arena needs N bytes (...".
_NO_SPACE = re.compile(r"not enough shared memory in \S+: the arena needs (\d+) bytes")


def start_entry(pid: int, command: List[str]) -> bytes:
    """The line that heads the output of a producer started by ``pid``."""
    return ("%s%s%s%d: %s\n" % (_START, time.strftime("%Y-%m-%d %H:%M:%S"), _STARTED_BY, pid,
                               " ".join(command))).encode("utf-8")


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of the log."""
    try:
        with open(path, "rb") as f:
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return "(no output: %s)" % path


def _last_start(path: Path) -> Optional[List[str]]:
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    heads = [i for i, line in enumerate(text) if line.startswith(_START) and _STARTED_BY in line]
    return text[heads[-1]:] if heads else None


def free_bytes(directory: Path) -> int:
    """What ``directory``'s file system has free for this user (as Java's FileStore.getUsableSpace counts it)."""
    s = os.statvfs(str(directory))
    return s.f_bavail * s.f_frsize


def space_still_short(path: Path, base: Path) -> Optional[str]:
    """Why starting the producer again would fail as the last start did, or None: the last start in the log failed
    for lack of shared memory, and ``base`` still has less free than that arena needed."""
    entry = _last_start(path)
    if not entry:
        return None
    for line in entry:
        m = _NO_SPACE.search(line)
        if m is None:
            continue
        needed, free = int(m.group(1)), free_bytes(base)
        if free >= needed:
            return None  # room was made since: try again
        started = entry[0][len(_START):].split(_STARTED_BY)
        return ("it failed for lack of shared memory when pid %s started it at %s, and %s still has %d bytes free of "
                "the %d its arena needs, so it was not started again: %s"
                % (started[1].split(":")[0], started[0], base, free, needed, line[line.find("not enough"):]))
    return None
