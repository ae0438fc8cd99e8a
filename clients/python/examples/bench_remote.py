"""Remote consumers side by side: this project's Flight server against TensorFlow's tf.data service, in one run.

Both serve a data set already in memory (tf.data service: ``Dataset.from_tensors(batch).repeat()`` with its
cross-trainer cache, dispatcher and worker in one process, compression off; this project: ``tensorsocket serve
--synthetic ... --preload --flight``) to K trainer processes on loopback. Every trainer is a Python process that
reads one byte of every 4 KiB page of each batch (as a training step reading its input would touch it), and
counts the batches it got over the same measured window. CPU is counted over that window for every process of a
side, server included, and divided by the batches all trainers got.

    python3 clients/python/examples/bench_remote.py [--seconds 10] [--consumers 1,4] [--shapes 3x32x32,1x28x28]
        [--peer-python PYTHON]   # a Python with tensorflow; without one the peer's rows are skipped, saying so
        [--java-consumers]       # also this project's Java remote consumers (tensorsocket-bench's WindowedConsumer)
        [--feeder]               # this project's server fed by a Python feeder (TensorProducer over ready torch
                                 # batches, one copy into the slot per batch) through serve --external --flight,
                                 # instead of serve --synthetic --preload; its CPU is counted with the server's

Prints one JSON object per row: side, trainer language, batch shape, consumers, batches/s per consumer (the
slowest), aggregate batches/s, CPU ms per batch, and for this project's rows the ratio to the peer's row of the
same shape and K measured in this run. Each side runs alone (the other's processes have exited).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CLIENT = os.path.join(ROOT, "clients", "python")
sys.path.insert(0, CLIENT)  # the client and its bundle
BATCH = 64
TICKS = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------------------------- trainers

def touch(array):
    """Reads one byte of every 4 KiB page of a C-contiguous numpy array."""
    import numpy as np
    flat = array.reshape(-1).view(np.uint8)
    return int(flat[::4096].sum())


def trainer_loop(batches, warm_seconds):
    """Iterates ``batches`` (numpy arrays); prints READY once it has read for ``warm_seconds`` (the warm-up: servers
    compile their hot paths, buffers reach their sizes), reads the window's start and end (wall-clock seconds) from
    stdin, and prints what it got in that window as JSON."""
    seen = 0
    ready_at = None
    announced = False
    windows = []
    window = None
    count = 0
    cpu0 = t0 = None
    sink = 0
    for a in batches:
        sink += touch(a)
        seen += 1
        if ready_at is None:
            ready_at = time.monotonic() + warm_seconds
        if not announced and time.monotonic() >= ready_at:
            print("READY", flush=True)
            announced = True
            threading.Thread(target=lambda: windows.append([float(x) for x in sys.stdin.readline().split()]),
                             daemon=True).start()
        if window is None:
            if not windows:
                continue
            window = windows[0]
        now = time.time()
        if t0 is None:
            if now >= window[0]:
                t0, cpu0 = now, time.process_time()
            continue
        count += 1
        if now >= window[1]:
            print(json.dumps({"batches": count, "seconds": now - t0, "cpu_s": time.process_time() - cpu0,
                              "sink": sink % 7}), flush=True)
            return


def tf_batches(address, shape, trainer_id):
    import numpy as np
    import tensorflow as tf
    data = np.random.default_rng(0).random((BATCH,) + shape, dtype=np.float32)
    ds = tf.data.Dataset.from_tensors(data).repeat()
    ds = ds.apply(tf.data.experimental.service.distribute(
        processing_mode=tf.data.experimental.service.ShardingPolicy.OFF, service=address, job_name="shared",
        compression=None,
        cross_trainer_cache=tf.data.experimental.service.CrossTrainerCache(trainer_id="trainer-%d" % trainer_id)))
    for x in ds:
        yield x.numpy()


def tensorsocket_batches(address):
    from tensorsocket_client import TensorConsumer
    with TensorConsumer(address, batch_size=BATCH, connect_timeout=60) as c:
        while True:
            for b in c:
                yield b["data"]


def tf_server(port):
    import tensorflow as tf
    d = tf.data.experimental.service.DispatchServer(tf.data.experimental.service.DispatcherConfig(port=port))
    w = tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(
        dispatcher_address="localhost:%d" % port))
    print("READY", flush=True)
    sys.stdin.readline()  # runs until the orchestrator closes stdin
    del w, d


# ------------------------------------------------------------------------------------------- orchestrator

def sample_elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """User + system CPU of process ``pid`` and its threads so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def read_line(proc, what, timeout):
    """The next line of ``proc``'s stdout; fails saying ``what`` did not come within ``timeout`` seconds."""
    import select
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit("%s: no %s within %.0f s" % (" ".join(proc.args[:4]), what, timeout))
        if select.select([proc.stdout], [], [], min(left, 0.5))[0]:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("%s: exited (code %s) before its %s" % (" ".join(proc.args[:4]), proc.wait(), what))
            return line.strip()


def measure(servers, trainers, seconds):
    """Releases the trainers into one window of ``seconds`` once all are READY; returns their results and the
    CPU seconds of the server's processes (``servers``: the server, and its feeder if it has one) over the window."""
    for t in trainers:
        line = read_line(t, "READY", 180)
        while line != "READY":
            line = read_line(t, "READY", 180)
    start = time.time() + 1.0
    end = start + seconds
    for t in trainers:
        t.stdin.write("%f %f\n" % (start, end))
        t.stdin.flush()
    time.sleep(max(0.0, start - time.time()))
    server_cpu0 = sum(cpu_seconds(p.pid) for p in servers)
    time.sleep(max(0.0, end - time.time()))
    server_cpu = sum(cpu_seconds(p.pid) for p in servers) - server_cpu0
    results = [json.loads(read_line(t, "result", 60)) for t in trainers]
    return results, server_cpu


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def row(side, language, shape, k, results, server_cpu):
    rates = [r["batches"] / r["seconds"] for r in results]
    cpu = server_cpu + sum(r["cpu_s"] for r in results)
    total = sum(r["batches"] for r in results)
    seconds = max(r["seconds"] for r in results)
    return {"side": side, "trainers": language, "shape": "%dx%s" % (BATCH, "x".join(map(str, shape))),
            "mb_per_batch": round(BATCH * 4 * sample_elements(shape) / 1e6, 3), "consumers": k,
            "batches_per_s_per_consumer": round(min(rates), 1), "batches_per_s_aggregate": round(sum(rates), 1),
            "cpu_ms_per_batch": round(1e3 * cpu / max(total, 1), 3),
            "server_cpu_share": round(server_cpu / max(cpu, 1e-9), 2), "seconds": round(seconds, 2)}


def run_tf_service(python, script, trainer_args, k, seconds):
    """Starts ``script``'s tf.data service (``--role tf-server``) and ``k`` of its trainers (``--role tf-trainer``, each
    with ``trainer_args``), measures them over one window of ``seconds`` (``measure``) and stops them all."""
    port = free_port()
    server = subprocess.Popen([python, script, "--role", "tf-server", "--port", str(port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    trainers = []
    try:
        read_line(server, "READY from the tf.data service", 180)
        for i in range(k):
            trainers.append(subprocess.Popen(
                [python, script, "--role", "tf-trainer", "--address", "grpc://localhost:%d" % port,
                 "--trainer-id", str(i)] + trainer_args,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        return measure([server], trainers, seconds)
    finally:
        stop(trainers + [server])


def run_peer(python, shape, k, seconds, warm_seconds):
    return run_tf_service(python, os.path.abspath(__file__),
                          ["--shape", "x".join(map(str, shape)), "--warm-seconds", str(warm_seconds)], k, seconds)


FEEDER_EPOCH_BATCHES = 1000  # a data set's epoch, not the 10 batches the server's preloaded data hold

FEEDER = r"""
import sys, torch
from tensorsocket_client import TensorProducer
shape, batches = tuple(int(x) for x in sys.argv[2].split("x")), int(sys.argv[3])
made = [torch.rand(%d, *shape) for _ in range(4)]  # ready batches, yielded in turn: the feeder's cost is its own
def epoch(e):
    for i in range(batches):
        yield (made[i %% len(made)],)
TensorProducer(sys.argv[1], None, epochs=10**9, samples_per_epoch=batches * %d, epoch_loader=epoch, names=("data",),
               start_producer=False).run()
""" % (BATCH, BATCH)


def run_tensorsocket(launcher, shape, k, seconds, warm_seconds, java_classpath=None, feeder=False):
    """This project's rows: ``serve --flight`` and K trainers, Python ones, or Java ones where ``java_classpath``; the
    server serves its own synthetic batches from memory, or with ``feeder`` a Python feeder's."""
    port = free_port()
    base = "/dev/shm/tensorsocket-bench-remote-%d" % os.getpid()
    os.makedirs(base, exist_ok=True)
    env = dict(os.environ, TENSORSOCKET_BASE=base)
    # about 8 MB of data, which stays in the processor's cache as the peer's one ready batch does
    samples = max(BATCH, int(8e6 // (4 * sample_elements(shape))) // BATCH * BATCH)
    log = tempfile.TemporaryFile(mode="w+")
    source = (["--external"] if feeder else
              ["--synthetic", "samples=%d,shape=%s,dtype=float32" % (samples, "x".join(map(str, shape))), "--preload",
               "--batch-size", str(BATCH), "--epochs", "0"])
    server = subprocess.Popen(
        [launcher, "serve", "--name", "bench"] + source + ["--flight", "127.0.0.1:%d" % port, "--min-consumers", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=log, text=True)
    address = "grpc://127.0.0.1:%d/bench" % port
    trainers = []
    servers = [server]
    try:
        if feeder:
            servers.append(subprocess.Popen(
                [sys.executable, "-c", FEEDER, "bench", "x".join(map(str, shape)), str(FEEDER_EPOCH_BATCHES)],
                env=dict(env, PYTHONPATH=os.pathsep.join(filter(None, [CLIENT, env.get("PYTHONPATH")]))),
                stdout=subprocess.DEVNULL, stderr=log))
        await_port(port, server, log)
        for _ in range(k):
            if java_classpath:
                cmd = java_command(java_classpath) + ["io.tensorsocket.bench.WindowedConsumer", address, str(BATCH),
                                                      str(warm_seconds)]
            else:
                cmd = [sys.executable, os.path.abspath(__file__), "--role", "tensorsocket-trainer", "--address",
                       address, "--warm-seconds", str(warm_seconds)]
            trainers.append(subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        return measure(servers, trainers, seconds)
    finally:
        stop(trainers + servers)
        subprocess.run(["rm", "-rf", base])


def await_port(port, server, log, timeout=60):
    """Waits until the server listens on ``port``; fails with its log if it exits first or takes too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise SystemExit("the server exited (code %d) before listening:\n%s" % (server.returncode, log.read()))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not listen on port %d within %d s" % (port, timeout))


def java_command(classpath):
    """The java command line (the launcher's JVM options and the class path given) for a class of the bench module."""
    from tensorsocket_bundle import JVM_OPTIONS
    java = os.path.join(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"), "bin", "java")
    return [java] + JVM_OPTIONS + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath]


def has_tensorflow(python):
    try:
        return subprocess.run([python, "-c", "import tensorflow"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--role", default="orchestrator",
                   choices=["orchestrator", "tf-server", "tf-trainer", "tensorsocket-trainer"])
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--consumers", default="1,4")
    p.add_argument("--shapes", default="3x32x32,1x28x28")
    p.add_argument("--peer-python", default=os.environ.get("TENSORFLOW_PYTHON", sys.executable))
    p.add_argument("--java-consumers", action="store_true")
    p.add_argument("--feeder", action="store_true",
                   help="feed this project's server from a Python feeder (serve --external) instead of from memory")
    p.add_argument("--launcher", default=os.environ.get("TENSORSOCKET_LAUNCHER", os.path.join(ROOT, "bin", "tensorsocket")))
    p.add_argument("--classpath", default="%s:%s/*" % (os.path.join(ROOT, "tensorsocket-cli/target/tensorsocket-cli.jar"),
                                                      os.path.join(ROOT, "tensorsocket-cli/target/lib")),
                   help="class path of the Java trainers (default: the packaged command line's)")
    # 25 s: the server's JVM (and a Java trainer's) compiles the stream's code with C2 for about that long on 2 cores
    p.add_argument("--warm-seconds", type=float, default=25,
                   help="seconds each trainer reads before the measured window (default 25)")
    p.add_argument("--port", type=int)
    p.add_argument("--address")
    p.add_argument("--shape")
    p.add_argument("--trainer-id", type=int, default=0)
    a = p.parse_args()
    if a.role == "tf-server":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        return tf_server(a.port)
    if a.role == "tf-trainer":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        shape = tuple(int(x) for x in a.shape.split("x"))
        return trainer_loop(tf_batches(a.address, shape, a.trainer_id), a.warm_seconds)
    if a.role == "tensorsocket-trainer":
        return trainer_loop(tensorsocket_batches(a.address), a.warm_seconds)

    peer = has_tensorflow(a.peer_python)
    if not peer:
        print("SKIPPED the tf.data service rows: %s cannot import tensorflow (give --peer-python, e.g. a virtual"
              " environment with tensorflow-cpu)" % a.peer_python, file=sys.stderr)
    print("# bench_remote on %d processors, batch %d float32, %.0f s windows" % (os.cpu_count(), BATCH, a.seconds),
          flush=True)
    for text in a.shapes.split(","):
        shape = tuple(int(x) for x in text.split("x"))
        for k in (int(x) for x in a.consumers.split(",")):
            peer_row = None
            if peer:
                peer_row = row("tf.data service", "python", shape, k, *run_peer(a.peer_python, shape, k, a.seconds,
                                                                               a.warm_seconds))
                print(json.dumps(peer_row), flush=True)
            for java in ([False, True] if a.java_consumers else [False]):
                r = row("tensorsocket flight" + (" + python feeder" if a.feeder else ""), "java" if java else "python",
                        shape, k, *run_tensorsocket(a.launcher, shape, k, a.seconds, a.warm_seconds,
                                                    a.classpath if java else None, a.feeder))
                if peer_row:
                    r["of_peer_batches_per_s"] = round(r["batches_per_s_per_consumer"]
                                                       / max(peer_row["batches_per_s_per_consumer"], 1e-9), 2)
                    r["of_peer_cpu_per_batch"] = round(r["cpu_ms_per_batch"] / max(peer_row["cpu_ms_per_batch"], 1e-9), 2)
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
