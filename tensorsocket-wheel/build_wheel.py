"""Builds the ``tensorsocket`` platform wheel: the Python client, the producer's jars and a Java runtime cut down
with jlink, with a ``tensorsocket`` console script. ``./mvnw package`` runs it (this module's pom); by hand:

    python3 tensorsocket-wheel/build_wheel.py --jdk $JAVA_HOME --jars tensorsocket-wheel/target/jars --out dist

Offline: it needs the JDK's jlink and objcopy, and setuptools, wheel and pip for the Python it runs on (Debian's
python3-setuptools, python3-wheel, python3-pip).
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients" / "python"
PLATFORM = "manylinux_2_28_x86_64"
# The runtime's modules: what the project's own modules require (their module-info.java), and what the libraries
# bundled with them use (jdeps --print-module-deps over each jar): java.sql and jdk.management for Arrow and
# Micrometer, java.naming for gRPC, jdk.unsupported for Netty's and Arrow's Unsafe memory access.
PROJECT_MODULES = ["core", "metrics", "pipeline", "flight", "bench", "cli"]
LIBRARY_MODULES = ["java.base", "java.logging", "java.naming", "java.sql", "jdk.management", "jdk.unsupported"]


def modules():
    required = set(LIBRARY_MODULES)
    for m in PROJECT_MODULES:
        info = (ROOT / ("tensorsocket-" + m) / "src/main/java/module-info.java").read_text(encoding="utf-8")
        required |= set(re.findall(r"requires\s+(?:transitive\s+)?((?:java|jdk)\.[\w.]+)\s*;", info))
    return sorted(required)
# Netty's TLS for the other platforms, which a Linux x86-64 wheel never loads.
FOREIGN = re.compile(r"-(linux-aarch_64|osx-x86_64|osx-aarch_64|windows-x86_64)\.jar$")


def jlink(jdk, out):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([str(Path(jdk) / "bin" / "jlink"), "--add-modules", ",".join(modules()), "--strip-debug",
                    "--no-man-pages", "--no-header-files", "--compress=zip-6", "--generate-cds-archive",
                    "--strip-native-debug-symbols", "objcopy=" + (shutil.which("objcopy") or "/usr/bin/objcopy"),
                    "--output", str(out)], check=True, stdout=subprocess.DEVNULL)
    # The class-data archive for heaps over 32 GB: the producer's heap is small (its batches live in shared memory).
    for f in out.glob("lib/server/classes_nocoops.jsa"):
        f.unlink()


def aot_cache(bundle):
    """Trains the ahead-of-time cache the launcher starts the bundled runtime from (``tensorsocket_bundle.AOT_CACHE``):
    the class-path jar lists the jars in one order, the jars get the one modification time the cache records (pip does
    not keep a wheel's times; the launcher sets them back), then ``aot-training`` runs on the bundled runtime with the
    launcher's options and class path."""
    sys.path.insert(0, str(bundle.parent))
    try:
        import tensorsocket_bundle as launcher
    finally:
        sys.path.pop(0)
    class_path_jar(bundle / launcher.CLASS_PATH_JAR, launcher.jars(bundle))
    for jar in launcher.jars(bundle):
        os.utime(jar, (launcher.AOT_STAMP, launcher.AOT_STAMP))
    cache = bundle / launcher.AOT_CACHE
    conf = bundle.parent.parent / "tensorsocket.aotconf"
    java = [str(bundle / "java" / "bin" / "java"), "-XX:AOTConfiguration=" + str(conf), "-Xlog:aot*=error,cds*=error"]
    tail = launcher.JVM_OPTIONS + ["-cp", os.pathsep.join(str(j) for j in launcher.class_path(bundle))]
    subprocess.run(java + ["-XX:AOTMode=record"] + tail + [launcher.MAIN_CLASS, "aot-training"], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    subprocess.run(java + ["-XX:AOTMode=create", "-XX:AOTCache=" + str(cache)] + tail, check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    conf.unlink()
    if not cache.is_file():
        raise SystemExit("the AOT cache's training wrote no %s" % cache)


def class_path_jar(path, jars):
    """Writes ``path``, a jar of no classes whose manifest's Class-Path lists ``jars`` (names relative to its folder),
    its lines cut at 72 bytes as the jar format wants, each continuation starting with a space."""
    text = "Class-Path: " + " ".join(j.name for j in jars if j.name != path.name)
    lines, line = [], text.encode("utf-8")
    while len(line) > 72:
        lines.append(line[:72])
        line = b" " + line[72:]
    lines.append(line)
    body = b"Manifest-Version: 1.0\r\n" + b"\r\n".join(lines) + b"\r\n\r\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=(2026, 1, 1, 0, 0, 0)), body)


def manifest(bundle):
    """FILES: size, SHA-256 and path of every file of java/ and lib/, which the launcher checks before it runs."""
    lines = []
    for p in sorted(bundle.rglob("*")):
        rel = p.relative_to(bundle).as_posix()
        if p.is_file() and rel.startswith(("java/", "lib/")):
            lines.append("%d %s %s\n" % (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest(), rel))
    (bundle / "FILES").write_text("".join(lines), encoding="utf-8")


def pyproject(version):
    """The client's pyproject.toml, plus the bundle package, its data and the console script."""
    text = (CLIENT / "pyproject.toml").read_text(encoding="utf-8")
    listed = 'packages = ["tensorsocket_client", "tensorsocket"]'
    if listed not in text:
        raise SystemExit("clients/python/pyproject.toml no longer lists %s" % listed)
    text = text.replace(listed, 'packages = ["tensorsocket_client", "tensorsocket", "tensorsocket_bundle"]')
    bundle_data = 'tensorsocket_bundle = ["FILES", "java/**/*", "lib/*.jar", "lib/*.aot"]\n'
    header = "[tool.setuptools.package-data]\n"
    if header in text:  # the client's own data (py.typed): the bundle's joins its table, which TOML allows once
        text = text.replace(header, header + bundle_data, 1)
    else:
        text += "\n" + header + bundle_data
    return text + """
[project.scripts]
tensorsocket = "tensorsocket_bundle:main"
"""


def missing_tools(jdk):
    """What this machine lacks to build the wheel, as a sentence saying what to install; None if nothing."""
    missing = []
    for module, package in (("setuptools", "python3-setuptools"), ("wheel", "python3-wheel"), ("pip", "python3-pip")):
        try:
            __import__(module)
        except ImportError:
            missing.append((module, package))
    if not (Path(jdk) / "bin" / "jlink").is_file():
        missing.append(("jlink", "a full JDK 25 (not a JRE)"))
    if shutil.which("objcopy") is None and not Path("/usr/bin/objcopy").exists():
        missing.append(("objcopy", "binutils"))
    if not missing:
        return None
    return "%s lacks %s; install %s" % (sys.executable, ", ".join(m for m, _ in missing),
                                         ", ".join(sorted({p for _, p in missing})))


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--jdk", required=True, help="The JDK whose jlink cuts the runtime (25 or newer).")
    a.add_argument("--jars", required=True, type=Path, help="The producer's jars (the cli jar and its dependencies).")
    a.add_argument("--out", required=True, type=Path, help="Where the wheel goes.")
    a.add_argument("--work", type=Path, default=ROOT / "tensorsocket-wheel" / "target" / "wheel")
    a.add_argument("--skip-without-tools", action="store_true",
                   help="Where a tool is missing, say so and build nothing (exit 0) rather than fail; unless "
                        "TENSORSOCKET_WHEEL_REQUIRED=1 (CI) says the wheel must be built.")
    args = a.parse_args()
    args.out = args.out.resolve()
    missing = missing_tools(args.jdk)
    if missing:
        if args.skip_without_tools and os.environ.get("TENSORSOCKET_WHEEL_REQUIRED") != "1":
            for old in args.out.glob("tensorsocket-*-py3-none-%s.whl" % PLATFORM):
                old.unlink()  # so that nothing tests a wheel of other sources
            print("SKIPPED the pip wheel: %s" % missing)
            return
        raise SystemExit("cannot build the pip wheel: %s" % missing)

    stage = args.work / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    for package in ("tensorsocket_client", "tensorsocket", "tensorsocket_bundle"):
        shutil.copytree(CLIENT / package, stage / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    bundle = stage / "tensorsocket_bundle"
    jlink(args.jdk, bundle / "java")
    (bundle / "lib").mkdir()
    jars = [j for j in sorted(args.jars.glob("*.jar")) if not FOREIGN.search(j.name)]
    if not any(j.name.startswith("tensorsocket-cli") for j in jars):
        raise SystemExit("no tensorsocket-cli jar in %s" % args.jars)
    for j in jars:
        if j.name.startswith(("api-", "pytorch-", "tensorsocket-djl")):
            raise SystemExit("%s is DJL's, which the wheel leaves out; exclude it in tensorsocket-wheel/pom.xml" % j)
        shutil.copy2(j, bundle / "lib" / j.name)
    aot_cache(bundle)
    manifest(bundle)
    version = re.search(r'__version__ = "([^"]+)"', (CLIENT / "tensorsocket_client" / "__init__.py").read_text()).group(1)
    (stage / "pyproject.toml").write_text(pyproject(version), encoding="utf-8")
    (stage / "setup.cfg").write_text("[bdist_wheel]\npython_tag = py3\nplat_name = %s\n" % PLATFORM, encoding="utf-8")

    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("tensorsocket-*-py3-none-%s.whl" % PLATFORM):
        old.unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "--disable-pip-version-check", "-w", str(args.out), str(stage)], check=True,
                   env=dict(os.environ, PIP_NO_CACHE_DIR="1"))
    wheel = args.out / ("tensorsocket-%s-py3-none-%s.whl" % (version, PLATFORM))
    if not wheel.is_file():
        raise SystemExit("pip wrote no %s; it wrote %s" % (wheel.name, [w.name for w in args.out.iterdir()]))
    print("%s: %.1f MB (runtime %.1f MB and %d jars of %.1f MB, unpacked)" % (
        wheel, wheel.stat().st_size / 1e6, sum(f.stat().st_size for f in (bundle / "java").rglob("*") if f.is_file()) / 1e6,
        len(jars), sum(j.stat().st_size for j in jars) / 1e6))


if __name__ == "__main__":
    main()
