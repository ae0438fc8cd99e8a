"""A fault run over the whole topology: local, remote and relayed consumers in Java and Python, SIGKILLs and
SIGSTOPs of consumers, relays, feeders and the producer, and a verdict on every sample.

    python3 clients/python/examples/fault_run.py --minutes 6 --seed 1

What runs (all on loopback, under a private TENSORSOCKET_BASE):

* producer ``fa``: ``tensorsocket serve --synthetic ... --flight 127.0.0.1:PORT`` (restarted after a SIGKILL);
* relay ``fr``: ``tensorsocket serve --from grpc://127.0.0.1:PORT/fa`` (restarted after a SIGKILL);
* producer ``fb``, started by a Python feeder (``python3 -m tensorsocket_client feed``), restarted with it;
* consumers, at most ``--max-consumers`` at once, each of a random kind: Java or Python, local on ``fa``,
  remote over Flight on ``fa``, local on the relay ``fr``, local on ``fb``; random batch sizes, epochs, steps,
  some waiting for an epoch start. Every consumer verifies every sample it gets (``consume``).

Each second it does one thing at random: starts a consumer, SIGKILLs one, SIGSTOPs one for 0.3-4 s (the
producers' stall timeout is 3 s: some are evicted), SIGKILLs the relay, the feeder or (rarely) the producer.

The verdict: no epoch line with a corrupt, out-of-order or duplicated sample (a consumer that found one exits
with a verification error, counted as corrupt); every consumer that failed named a cause from the fault it met
(eviction, its producer killed or stopped, its relay's upstream, a cut stream), none timed out; every process
ended when told to; nothing left in the producers' base directory. It prints the counts and the worst wait of
a consumer that survived, with the fault that came last before it.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
CHECKOUT = os.path.dirname(os.path.dirname(CLIENT))
DATA = "samples=4000,shape=3x8x8,dtype=float32,seed=7"
SAMPLES = 4000

# what a consumer may say when it fails because of a fault it met; anything else is a failure of the run
EXPECTED_CAUSES = ("held batch", "stall timeout", "went away", "exited or was killed", "was killed", "stopped",
                   "unreachable", "went silent", "relay's upstream", "loader of producer", "lost the connection",
                   "shutting down", "has finished", "is in its last epoch", "not responding", "did not answer")
VERIFICATION = ("corrupt", "out-of-order", "distinct of", "ended after")


class Proc:
    def __init__(self, kind, cmd, env):
        self.kind = kind
        self.cmd = cmd
        self.started = time.monotonic()
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  start_new_session=True)
        self.lines = []  # (monotonic time, parsed JSON)
        self.stopped_until = 0.0
        self.stops = []  # (from, to) of each SIGSTOP this process had
        self.killed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.lines.append((time.monotonic(), json.loads(line)))
                except ValueError:
                    pass

    def alive(self):
        return self.p.poll() is None

    def signal(self, s):
        try:
            os.kill(self.p.pid, s)
        except ProcessLookupError:
            pass

    def error_line(self):
        self.err.seek(0)
        lines = [line for line in self.err.read().splitlines() if line.startswith("tensorsocket")]
        return lines[-1] if lines else ""

    def stderr(self):
        self.err.seek(0)
        return self.err.read()


class Run:
    def __init__(self, args):
        self.args = args
        self.rand = random.Random(args.seed)
        self.base = tempfile.mkdtemp(prefix="tensorsocket-faults-", dir="/dev/shm")
        self.launcher = os.path.join(CHECKOUT, "bin", "tensorsocket")
        self.env = dict(os.environ, TENSORSOCKET_BASE=self.base, PYTHONPATH=CLIENT, PYTHONDONTWRITEBYTECODE="1",
                        TENSORSOCKET_LAUNCHER=self.launcher)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.procs = []
        self.producer = self.relay = self.feeder = None
        self.counts = dict(processes=0, kills=0, stops=0, consumer_kills=0, relay_kills=0, feeder_kills=0,
                           producer_kills=0)
        self.faults = []  # (time, what)
        self.problems = []

    def start(self, kind, cmd):
        p = Proc(kind, cmd, self.env)
        self.procs.append(p)
        self.counts["processes"] += 1
        return p

    def ts(self, *args):
        return [self.launcher] + list(args)

    def py(self, *args):
        return [self.args.python, "-u", "-m", "tensorsocket_client"] + list(args)

    def start_producer(self):
        self.producer = self.start("producer", self.ts("serve", "--name", "fa", "--synthetic", DATA, "--batch-size", "50",
                                                       "--epochs", "0", "--flight", "127.0.0.1:%d" % self.port,
                                                       "--stall-timeout-s", "3", "--loader-delay-ms", "1",
                                                       "--start-grace-ms", "0"))

    def start_relay(self):
        self.relay = self.start("relay", self.ts("serve", "--name", "fr", "--from", "grpc://127.0.0.1:%d/fa" % self.port,
                                                 "--batch-size", "50", "--epochs", "0", "--stall-timeout-s", "3",
                                                 "--start-grace-ms", "0"))

    def start_feeder(self):
        self.feeder = self.start("feeder", self.py("feed", "--name", "fb", "--synthetic", DATA, "--batch-size", "64",
                                                   "--epochs", "100000"))

    def start_consumer(self):
        target = self.rand.choice(["local", "remote", "relay", "fed"])
        lang = self.rand.choice(["java", "python"])
        name = {"local": "fa", "remote": "grpc://127.0.0.1:%d/fa" % self.port, "relay": "fr", "fed": "fb"}[target]
        args = ["consume", "--name", name, "--batch-size", str(self.rand.choice([1, 7, 32, 50, 64, 129, 500]))]
        if self.rand.random() < 0.7:
            args += ["--epochs", str(self.rand.randint(1, 3))]
        if self.rand.random() < 0.4:
            args += ["--wait-for-epoch-start"]
        args += ["--step-ms", str(self.rand.choice([0, 0, 1, 2]))]
        args += ["--connect-timeout-s", "20"]
        cmd = self.ts(*args) if lang == "java" else self.py(*args)
        self.start("consumer %s %s" % (lang, target), cmd)

    def consumers(self):
        return [p for p in self.procs if p.kind.startswith("consumer") and p.alive()]

    def fault(self, what):
        self.faults.append((time.monotonic(), what))

    def tick(self):
        now = time.monotonic()
        for p in self.procs:
            if p.stopped_until and now >= p.stopped_until:
                p.signal(signal.SIGCONT)
                p.stopped_until = 0.0
        for role, restart in (("producer", self.start_producer), ("relay", self.start_relay),
                              ("feeder", self.start_feeder)):
            p = getattr(self, role)
            if p is not None and not p.alive():
                if role == "producer" and not p.killed:
                    self.problems.append("producer fa exited by itself (rc %s): %s" % (p.p.returncode, p.error_line()))
                restart()
        live = self.consumers()
        action = self.rand.choices(["start", "kill", "stop", "relay", "feeder", "producer"],
                                   weights=[40, 15, 20, 7, 6, 2])[0]
        if action == "start" and len(live) < self.args.max_consumers:
            self.start_consumer()
        elif action == "kill" and live:
            c = self.rand.choice(live)
            c.killed = True
            c.signal(signal.SIGKILL)
            self.counts["kills"] += 1
            self.counts["consumer_kills"] += 1
            self.fault("SIGKILL %s" % c.kind)
        elif action == "stop" and [c for c in live if not c.stopped_until]:
            c = self.rand.choice([c for c in live if not c.stopped_until])
            seconds = self.rand.uniform(0.3, 4.0)
            c.signal(signal.SIGSTOP)
            c.stopped_until = now + seconds
            c.stops.append((now, now + seconds))
            self.counts["stops"] += 1
            self.fault("SIGSTOP %s for %.1f s" % (c.kind, seconds))
        elif action in ("relay", "feeder") and getattr(self, action).alive():
            p = getattr(self, action)
            p.killed = True
            p.signal(signal.SIGKILL)
            self.counts["kills"] += 1
            self.counts[action + "_kills"] += 1
            self.fault("SIGKILL " + action)
        elif (action == "producer" and self.producer.alive()
              and self.counts["producer_kills"] < self.args.producer_kills):
            self.producer.killed = True
            self.producer.signal(signal.SIGKILL)
            self.counts["kills"] += 1
            self.counts["producer_kills"] += 1
            self.fault("SIGKILL producer")

    def run(self):
        self.start_producer()
        time.sleep(3)
        self.start_relay()
        self.start_feeder()
        end = time.monotonic() + self.args.minutes * 60
        while time.monotonic() < end:
            self.tick()
            time.sleep(1.0)
        for p in self.procs:
            if p.stopped_until:
                p.signal(signal.SIGCONT)
                p.stopped_until = 0.0
        # consumers finish their epochs or are told to stop; then the producers
        for p in self.consumers():
            if "--epochs" not in p.cmd:  # reads until told to stop
                p.killed = True
                p.signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        for p in self.consumers():
            while p.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            if p.alive():
                self.problems.append("%s had not finished its epochs 60 s after the faults ended" % p.kind)
                p.killed = True
                p.signal(signal.SIGTERM)
        # a SIGKILLed producer leaves its files; a new one under the same name reclaims them, so restart what
        # is down, let it come up, and stop everything the way users do
        for role, restart in (("producer", self.start_producer), ("relay", self.start_relay),
                              ("feeder", self.start_feeder)):
            if not getattr(self, role).alive():
                restart()
        time.sleep(5)
        for p in (self.feeder, self.relay, self.producer):
            if p is not None and p.alive():
                p.signal(signal.SIGINT if p is self.feeder else signal.SIGTERM)
        hung = []
        for p in self.procs:
            try:
                p.p.wait(30)
            except subprocess.TimeoutExpired:
                hung.append(p)
                p.signal(signal.SIGKILL)
                p.p.wait(10)
            p.reader.join(5)
        return self.verdict(hung)

    def verdict(self, hung):
        epochs = samples = evictions = failed = 0
        worst = (0, None, None)
        for p in self.procs:
            if not p.kind.startswith("consumer"):
                continue
            first = True
            for t, line in p.lines:
                if "epoch" not in line or "samples" not in line:
                    continue
                # a first epoch's first wait includes joining (and waiting for an epoch start): not a stall
                joined, first = first, False
                epochs += 1
                samples += line["samples"]
                if line["corrupt"] or line["out_of_order"]:
                    self.problems.append("%s: %s" % (p.kind, line))
                if line["start"] == "epoch_start" and line["complete"] and line["duplicates"]:
                    self.problems.append("%s: duplicates in an exact epoch: %s" % (p.kind, line))
                wait = line.get("longest_wait_ms", 0)
                # a consumer stopped itself during the epoch waited for itself
                own = any(a < t and b > t - line["seconds"] for a, b in p.stops)
                if not joined and not own and not p.killed and p.p.returncode == 0 and wait > worst[0]:
                    before = [f for f in self.faults if f[0] <= t]
                    worst = (wait, p.kind, before[-1][1] if before else "none")
            if p.killed:
                continue
            if p.p.returncode != 0:
                failed += 1
                error = p.error_line()
                if "held batch" in error:
                    evictions += 1
                if any(v in error for v in VERIFICATION):
                    self.problems.append("%s failed verification: %s" % (p.kind, error))
                elif not any(c in error for c in EXPECTED_CAUSES):
                    self.problems.append("%s failed with an unexpected cause (rc %s): %s" % (p.kind, p.p.returncode,
                                                                                         error or p.stderr()[-500:]))
        for p in hung:
            self.problems.append("%s did not end within 30 s when told to: %s" % (p.kind, " ".join(p.cmd)))
        left = []
        for root, _dirs, files in os.walk(self.base):
            left += [os.path.join(root, f) for f in files]
        if left:
            self.problems.append("left behind in %s: %s" % (self.base, left))
        shutil.rmtree(self.base, ignore_errors=True)
        summary = dict(seed=self.args.seed, minutes=self.args.minutes, **self.counts, evictions=evictions,
                       consumers_failed=failed, epochs_verified=epochs, samples_verified=samples,
                       worst_survivor_wait_ms=worst[0], worst_wait_consumer=worst[1], worst_wait_after=worst[2],
                       problems=len(self.problems))
        print(json.dumps(summary))
        for p in self.problems:
            print("PROBLEM", p)
        return 0 if not self.problems else 1


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--minutes", type=float, default=6)
    a.add_argument("--seed", type=int, default=None)
    a.add_argument("--max-consumers", type=int, default=8)
    a.add_argument("--producer-kills", type=int, default=2, help="SIGKILLs of the producer at most (default 2).")
    a.add_argument("--python", default="/usr/bin/python3", help="The Python with numpy and pyarrow for the Python"
                                                                " consumers and the feeder.")
    args = a.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    sys.exit(Run(args).run())


if __name__ == "__main__":
    main()
