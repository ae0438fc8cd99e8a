"""Where producers live on this host: the producer directory, its files, whether a producer holds it, and the
launcher that starts and cleans producers (docs/PROTOCOL.md, section 1)."""

import fcntl
import os
import pwd
import re
import struct
import sys
import tempfile
from pathlib import Path

from .errors import PermissionDenied, ProducerNotFound

# The files of a producer's directory.
SOCKET_FILE = "control.sock"
LANE_FILE_PREFIX = "lane-"  # lane k's arena, beside the producer's, while the lane runs
ARENA_FILE = "arena"
LOCK_FILE = "producer.lock"
FEEDER_SOCKET_FILE = "feeder.sock"
RINGS_FILE = "rings"
DRAWS_FILE = "draws"  # a producer's draws, read to checkpoint a consumer (see _checkpoint.py)
FAILED_FILE = "failed"  # why a producer failed before it served, kept a second for the consumers waiting for it

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def not_found(message: str) -> ProducerNotFound:
    """ProducerNotFound with ``message``, naming the directories of producers that died without cleaning up
    and the command that frees them, if there are any."""
    stale = stale_producers()
    if stale and " clean" not in message:
        message += (" Left over by producers that died (not running): %s; free them with: %s clean"
                    % (", ".join(stale), launcher()))
    return ProducerNotFound(message)


def base_directory() -> Path:
    """The per-user directory under which named producers live ($TENSORSOCKET_BASE overrides it)."""
    override = os.environ.get("TENSORSOCKET_BASE")
    if override and override.strip():
        return Path(override)
    shm = Path("/dev/shm")
    root = shm if shm.is_dir() else Path(tempfile.gettempdir())
    return root / ("tensorsocket-" + pwd.getpwuid(os.getuid()).pw_name)


def check_name(name):
    if name is None or not _NAME.match(name):
        raise ValueError("invalid producer name '%s': use 1 to 64 letters, digits, '.', '_' or '-', starting with "
                         "a letter or digit" % name)


def directory_for(name) -> Path:
    check_name(name)
    return base_directory() / name


def is_locked(directory):
    """Whether a live producer holds the lock of ``directory``: a producer runs exactly while it does.

    The producer holds a POSIX record lock on the whole of producer.lock (Java's FileChannel.tryLock);
    F_GETLK asks who holds it without taking it, so it needs only read access and disturbs nobody.
    """
    try:
        fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDONLY)
    except OSError:
        return False
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        return struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0] != fcntl.F_UNLCK
    except OSError:
        return False
    finally:
        os.close(fd)


# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (64-bit off_t).
_FLOCK = "hhqqi4x"


def _producer_directories():
    base = base_directory()
    try:
        return sorted((p for p in base.iterdir() if p.is_dir() and any(
            (p / f).exists() for f in (LOCK_FILE, SOCKET_FILE, ARENA_FILE))), key=lambda p: p.name)
    except OSError:
        return []


def live_producers():
    """Names of the producers running under the base directory: those whose lock is held."""
    return [p.name for p in _producer_directories() if (p / SOCKET_FILE).exists() and is_locked(p)]


def stale_producers():
    """Names of producer directories whose producer died without cleaning up (``tensorsocket clean`` frees them)."""
    return [p.name for p in _producer_directories() if not is_locked(p)]


def _user_name(uid):
    try:
        import pwd
        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return str(uid)


def _group_name(gid):
    try:
        import grp
        return grp.getgrgid(gid).gr_name
    except (KeyError, ImportError):
        return str(gid)


def check_accessible_to_current_user(directory):
    """The rule of docs/PROTOCOL.md section 1, as the Java consumer follows it: a producer directory is
    used if this user owns it, or if it is shared with a group (group read and search, nothing for
    others) that this process is in. Raises PermissionDenied otherwise."""
    import stat as _stat
    st = os.stat(directory, follow_symlinks=False)
    if st.st_uid == os.geteuid():
        return
    owner, me = _user_name(st.st_uid), _user_name(os.geteuid())
    mode = st.st_mode
    group_shared = bool(mode & _stat.S_IRGRP) and bool(mode & _stat.S_IXGRP) and not (mode & 0o007)
    if not group_shared:
        raise PermissionDenied("%s belongs to user '%s', not to '%s', and is not shared with a group; connect only to "
                               "producers you started, or ask the owner to start it with --group <a group you are in>"
                               % (directory, owner, me))
    if st.st_gid not in set(os.getgroups()) | {os.getgid(), os.getegid()}:
        raise PermissionDenied("%s belongs to user '%s' and is shared with group '%s', which '%s' is not in; ask to be "
                               "added to it, or the owner to start the producer with --group <a group you are in>"
                               % (directory, owner, _group_name(st.st_gid), me))


def launcher_command(warn=None, environ=None):
    """``(argv, env)`` that start the ``tensorsocket`` command, first match wins: ``TENSORSOCKET_LAUNCHER``, a
    ``tensorsocket`` on PATH, ``bin/tensorsocket`` of the checkout this client lies in, the producer bundled with the
    ``tensorsocket`` wheel (run on its own Java runtime; env names its launcher for messages); None if there is none.
    A damaged bundle raises its BundleError, which says what to reinstall; ``warn`` gets its notices (a JAVA_HOME
    passed over). The command and its env are for a process started with ``environ`` (default: this one's)."""
    import shutil
    environ = os.environ if environ is None else environ
    explicit = environ.get("TENSORSOCKET_LAUNCHER")
    if explicit:
        return [explicit], None
    found = shutil.which("tensorsocket")
    if found and not _is_own_script(found):
        return [found], None
    checkout = Path(__file__).resolve().parents[3] / "bin" / "tensorsocket"
    if os.access(str(checkout), os.X_OK):
        return [str(checkout)], None
    try:
        import tensorsocket_bundle as bundle
    except ImportError:
        return None
    if not bundle.present():
        return None
    return bundle.command(environ=environ, warn=warn), bundle.environment(environ)


def _is_own_script(path) -> bool:
    """Whether ``path`` is the ``tensorsocket`` console script of this Python's wheel: then the bundle's command is
    run directly, without a Python started only to replace itself with the JVM."""
    script = Path(sys.executable).parent / "tensorsocket"
    try:
        if not (script.exists() and os.path.samefile(path, str(script))):
            return False
        import tensorsocket_bundle as bundle
    except (OSError, ImportError):
        return False
    return bundle.present()


def launcher():
    """How a hint names the launcher: ``tensorsocket`` when it is on PATH, else its real path."""
    import shutil
    try:
        found = launcher_command()
    except Exception:  # noqa: BLE001 (a damaged bundle: its own error says so when it is started)
        found = None
    if found is None:
        return "tensorsocket"
    argv, env = found
    if env is not None:
        return env["TENSORSOCKET_LAUNCHER"]
    return "tensorsocket" if shutil.which("tensorsocket") == argv[0] else argv[0]
