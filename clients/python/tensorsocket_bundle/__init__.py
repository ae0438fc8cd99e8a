"""The producer and its Java runtime, as the ``tensorsocket`` platform wheel carries them, and the ``tensorsocket``
command that runs them.

The wheel holds, beside this module::

    tensorsocket_bundle/
        java/     a Java runtime cut down with jlink to the modules the producer uses
        lib/      the producer's jars (core, pipeline, flight, metrics, bench, cli; picocli, slf4j, Arrow Flight)
        FILES     one line per file of java/ and lib/: its size, its SHA-256 and its path

Which Java runs, first match wins: ``JAVA_HOME`` when it holds a Java 25 or newer (a user who set it chose that
runtime: a site's patched JDK, a profiler's agent), else the runtime bundled here. A ``JAVA_HOME`` too old for the
producer is passed over with a line on stderr saying so, not an error: clusters set it for other tools. The Python
client goes further up the chain first (``TENSORSOCKET_LAUNCHER``, then a ``tensorsocket`` on PATH: see
``tensorsocket_client.directory.launcher_command``); this module is its last resort.

Before it runs, the launcher checks that every file listed in FILES is there with its size (a missing or cut file
fails at once, naming it); ``tensorsocket --version`` also checks every hash. A damaged bundle fails with a message
saying which file and how to reinstall, never with a JVM crash.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HOME = Path(__file__).resolve().parent
MANIFEST = "FILES"
MAIN_CLASS = "io.tensorsocket.cli.Main"
MIN_JAVA = 25
# As bin/tensorsocket: FFM calls, and Arrow Flight reads direct buffers' addresses reflectively and needs Netty's
# sun.misc.Unsafe memory access.
JVM_OPTIONS = ["--enable-native-access=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
               "--sun-misc-unsafe-memory-access=allow", "-Dio.netty.tryReflectionSetAccessible=true"]


# The ahead-of-time cache of the bundled runtime (trained when the wheel is built: build_wheel.py), and the one
# modification time its jars had then, which the cache checks: pip does not keep a wheel's times, so the launcher sets
# them back once (where it may; else the runtime starts without the cache, only slower).
AOT_CACHE = "lib/tensorsocket.aot"
AOT_STAMP = 1767225600  # 2026-01-01T00:00:00Z
AOT_OPTIONS = ["-Xlog:aot*=off", "-Xlog:cds*=off"]  # a cache this runtime cannot use is passed over in silence


class BundleError(Exception):
    """The bundle cannot run: a file is missing or damaged."""


def present(home=HOME):
    """Whether this installation carries the producer (the platform wheel) rather than only its source."""
    return (home / MANIFEST).is_file()


def _reinstall_hint():
    return ("reinstall it: pip install --force-reinstall tensorsocket-<version>-py3-none-manylinux_2_28_x86_64.whl "
            "(or set JAVA_HOME to a JDK %d and build the project from source)" % MIN_JAVA)


def _entries(home):
    with open(home / MANIFEST, encoding="utf-8") as f:
        for line in f:
            size, digest, path = line.rstrip("\n").split(" ", 2)
            yield int(size), digest, path


def verify(home=HOME, hashes=False, parts=("java/", "lib/")):
    """Raises BundleError naming the damaged files of ``parts``: missing, of the wrong size, or (with ``hashes``)
    with other bytes than the wheel's; returns the number of files checked."""
    damaged, n = [], 0
    try:
        entries = list(_entries(home))
    except (OSError, ValueError) as e:
        raise BundleError("the tensorsocket bundle at %s is damaged: its list of files (%s) cannot be read (%s); %s"
                          % (home, MANIFEST, e, _reinstall_hint())) from e
    for size, digest, path in entries:
        if not path.startswith(parts):
            continue
        n += 1
        p = home / path
        try:
            actual = p.stat().st_size
        except OSError:
            damaged.append("%s is missing" % path)
            continue
        if actual != size:
            damaged.append("%s has %d bytes, not %d" % (path, actual, size))
        elif hashes and _sha256(p) != digest:
            damaged.append("%s has other bytes than the wheel's" % path)
    java = home / "java" / "bin" / "java"
    if "java/" in parts and java.exists() and not os.access(str(java), os.X_OK):
        damaged.append("java/bin/java is not executable")
    if damaged:
        raise BundleError("the Java runtime and jars bundled with tensorsocket at %s are damaged: %s%s; %s"
                          % (home, "; ".join(damaged[:3]),
                             " (and %d more)" % (len(damaged) - 3) if len(damaged) > 3 else "", _reinstall_hint()))
    return n


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def java_version(java_home):
    """The major version of the Java at ``java_home`` as its ``release`` file states it, or None."""
    try:
        with open(Path(java_home) / "release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("JAVA_VERSION="):
                    parts = line.split("=", 1)[1].strip().strip('"').split(".")
                    return int(parts[1] if parts[0] == "1" else parts[0].split("-")[0])
    except (OSError, ValueError):
        return None
    return None


def choose_java(environ=os.environ, home=HOME, warn=None):
    """``(path of java, why that one)``: ``JAVA_HOME``'s if it is Java 25 or newer, else the bundled one."""
    explicit = environ.get("JAVA_HOME")
    if explicit:
        java = Path(explicit) / "bin" / "java"
        version = java_version(explicit)
        if version is not None and version >= MIN_JAVA and os.access(str(java), os.X_OK):
            return str(java), "chosen by JAVA_HOME"
        if warn is not None:
            found = "Java %d" % version if version is not None else "no Java the launcher can read"
            warn("tensorsocket: JAVA_HOME=%s holds %s; the producer needs %d or newer, so the runtime bundled with "
                 "the wheel runs (unset JAVA_HOME, or point it at a JDK %d, to silence this)"
                 % (explicit, found, MIN_JAVA, MIN_JAVA))
    return str(home / "java" / "bin" / "java"), "bundled with the tensorsocket wheel"


def launcher_name():
    """How messages name this command: ``tensorsocket`` where that is this wheel's script on PATH, else its path."""
    script = Path(sys.executable).parent / "tensorsocket"
    on_path = shutil.which("tensorsocket")
    if on_path and script.exists() and os.path.samefile(on_path, str(script)):
        return "tensorsocket"
    return str(script) if script.exists() else "%s -m tensorsocket_bundle" % sys.executable


# A jar of no classes whose manifest lists every other jar of lib/ in one order (its Class-Path, relative to lib/): the
# class path the launcher passes and the cache was trained with, short on the command line and the same wherever the
# wheel is installed.
CLASS_PATH_JAR = "lib/tensorsocket-classpath.jar"


def jars(home=HOME):
    """Every jar of the bundle, in name order."""
    return sorted((home / "lib").glob("*.jar"), key=lambda p: p.name)


def class_path(home=HOME):
    """What the launcher passes as ``-cp``: the class-path jar where the bundle has one, else every jar in name order
    (the order the cache's training run listed them in)."""
    manifest_jar = home / CLASS_PATH_JAR
    return [manifest_jar] if manifest_jar.is_file() else jars(home)


AOT_TIMES_SET = "lib/.aot-times-set"


def aot_options(home=HOME):
    """The options that start the bundled runtime from its ahead-of-time cache, or [] where it cannot: no cache, or
    jars whose modification time is not the one the cache recorded. The launcher sets the times back once, after the
    installation (pip does not keep them), having checked every jar's hash; a jar changed after that keeps its new
    time, so the runtime then starts without the cache rather than from classes of other bytes."""
    cache = home / AOT_CACHE
    if not cache.is_file():
        return []
    every = jars(home)
    stamped = home / AOT_TIMES_SET
    try:
        if not stamped.exists():
            verify(home, hashes=True, parts=("lib/",))
            for jar in every:
                os.utime(str(jar), (AOT_STAMP, AOT_STAMP))
            stamped.touch()
        if any(int(jar.stat().st_mtime) != AOT_STAMP for jar in every):
            return []
    except (OSError, BundleError):
        return []  # a read-only installation, or a damaged one (its check says so): it starts without the cache
    return ["-XX:AOTCache=" + str(cache)] + AOT_OPTIONS


def command(args=(), environ=os.environ, home=HOME, warn=None, hashes=False):
    """The command line that runs ``tensorsocket args...`` on the bundle, after checking it (BundleError). The bundled
    runtime starts from the cache trained for it (``aot_options``)."""
    java, why = choose_java(environ, home, warn)
    bundled = java.startswith(str(home))
    verify(home, hashes=hashes, parts=("java/", "lib/") if bundled else ("lib/",))
    opts = environ.get("TENSORSOCKET_JAVA_OPTS", "").split()
    aot = aot_options(home) if bundled and not environ.get("TENSORSOCKET_NO_AOT") else []
    return ([java] + aot + JVM_OPTIONS + opts + ["-Dtensorsocket.runtime=" + why, "-cp",
                                                 os.pathsep.join(str(j) for j in class_path(home)), MAIN_CLASS]
            + list(args))


L3_SIZE = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")
LOADER = Path("/lib64/ld-linux-x86-64.so.2")


def copy_tuning(environ=os.environ, l3_size=L3_SIZE, loader=LOADER):
    """The ``GLIBC_TUNABLES`` the producer's JVM should run with, or None; the rule of bin/tensorsocket.

    The producer copies batches into slots with the C library's memmove, which writes past the cache from
    ``glibc.cpu.x86_non_temporal_threshold`` on, a size glibc derives from the cache the processor reports. Some
    virtual machines report a far larger cache than they have, and batches larger than the real one are then copied
    through it, at up to 0.6 times the speed. Where glibc's threshold exceeds three quarters of the L3 cache the kernel
    reports, this lowers it to that; it never raises it and leaves a ``GLIBC_TUNABLES`` the user set alone."""
    if "GLIBC_TUNABLES" in environ:
        return None
    try:
        l3 = int(re.sub(r"[^0-9]", "", Path(l3_size).read_text())) * 1024
        listed = subprocess.run([str(loader), "--list-tunables"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    found = re.search(r"^glibc\.cpu\.x86_non_temporal_threshold: (0x[0-9a-f]+)", listed, re.M)
    wanted = l3 * 3 // 4
    if found is None or wanted <= 0 or int(found.group(1), 16) <= wanted:
        return None
    return "glibc.cpu.x86_non_temporal_threshold=%d" % wanted


def environment(environ=os.environ):
    """The environment the producer runs in: messages name the launcher as the user can type it, and large copies
    write past the cache where the C library misjudges its size (``copy_tuning``)."""
    env = dict(environ)
    env.setdefault("TENSORSOCKET_LAUNCHER", launcher_name())
    tuning = copy_tuning(environ)
    if tuning is not None:
        env["GLIBC_TUNABLES"] = tuning
    return env


def main(argv=None):
    """The ``tensorsocket`` console script: replaces this process with the producer's JVM."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if not present():
            raise BundleError("this tensorsocket installation carries no producer (it was installed from source, "
                              "without the bundled runtime); install the tensorsocket wheel, or build the project and "
                              "run its bin/tensorsocket")
        cmd = command(args, warn=lambda m: print(m, file=sys.stderr),
                      hashes=any(a in ("--version", "-V") for a in args))
    except BundleError as e:
        print("tensorsocket: error: %s" % e, file=sys.stderr)
        return 1
    os.execve(cmd[0], cmd, environment())
