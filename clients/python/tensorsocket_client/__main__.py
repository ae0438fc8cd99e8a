"""``python3 -m tensorsocket_client consume ...``: the Python twin of ``tensorsocket consume``;
``python3 -m tensorsocket_client feed --synthetic ...``: feeds the Java generator's synthetic stream into an
``--external`` producer, so both consume commands verify what a Python feeder wrote.

Reads epochs from a producer, checks every sample of a synthetic source against the generator, and
prints one JSON line per epoch with the same fields as the Java command. Exits 0 on success, else 1
with one line on stderr: ``tensorsocket: error: ...``.
"""

import argparse
import json
import math
import sys
import time

from . import stream
from ._waiting import DEFAULT_CONNECT_TIMEOUT
from .consumer import TensorConsumer
from .errors import TensorSocketError
from .synthetic import PREFIX, SyntheticSpec, Verifier, seeded_order


class _Failure(Exception):
    pass


def _json(fields):
    parts = []
    for k, v in fields.items():
        if isinstance(v, bool):
            s = "true" if v else "false"
        elif isinstance(v, float):
            s = "%.3f" % v if math.isfinite(v) else "null"
        elif isinstance(v, int):
            s = str(v)
        else:
            s = '"%s"' % str(v).replace("\\", "\\\\").replace('"', '\\"')
        parts.append('"%s": %s' % (k, s))
    return "{" + ", ".join(parts) + "}"


def _rank_fields(c):
    r = getattr(c, "job_rank", None)
    return {} if r is None else dict(job=r[0], rank=r[1], world_size=r[2])


def consume(args):
    target = dict(directory=args.dir) if args.dir else dict(name=args.name)
    if args.name is not None and args.name.lower().startswith(("grpc://", "grpc+tls://")):
        target.update(token=args.token, token_file=args.token_file, trust=args.trust, epochs=args.epochs or 0,
                      silence_timeout=args.silence_timeout_s, wait_for_epoch_start=args.wait_for_epoch_start)
    elif args.token or args.token_file or args.trust:
        raise _Failure("--token/--token-file/--trust are for grpc:// producers; '%s' is a local one"
                       % (args.name or args.dir))
    else:
        # The remote server's silence timeout plays the liveness role for grpc:// producers.
        target.update(liveness=args.liveness_s, wait_for_epoch_start=args.wait_for_epoch_start, handoff=args.handoff,
                      spin=args.spin_us / 1e6)
    if args.job is not None or args.rank is not None or args.world_size is not None:
        target.update(job=args.job, rank=args.rank, world_size=args.world_size)
    with TensorConsumer(batch_size=args.batch_size, drop_last=args.drop_last, connect_timeout=args.connect_timeout_s,
                        batch_timeout=args.batch_timeout_s, **target) as c:
        description = c.source_description
        if not description.startswith(PREFIX):
            raise _Failure("the producer serves '%s', not synthetic data; consume can only verify synthetic sources"
                           % description)
        spec = SyntheticSpec.parse(description)
        spe = c.samples_per_epoch
        expected = spe // args.batch_size * args.batch_size if args.drop_last else spe
        ordered = seeded_order(description)
        verifier = Verifier(spec, ordered)
        ids_out = open(args.ids_out, "w") if args.ids_out else None
        failure = None
        e = 0
        while args.epochs is None or e < args.epochs:
            e += 1
            epoch = -1
            started = time.monotonic()
            asked = started
            longest_wait = 0.0
            for b in c:
                longest_wait = max(longest_wait, time.monotonic() - asked)
                epoch = b.epoch
                if getattr(c, "job_rank", None) is None:
                    verifier.accept(b["data"], b["label"], b["id"], c.stream_position(b))
                    if ids_out is not None:
                        ids_out.write(" ".join(map(str, [c.stream_position(b)] + [int(i) for i in b["id"]])) + "\n")
                else:
                    positions = [c.stream_position(b, i) for i in range(len(b))]
                    verifier.accept(b["data"], b["label"], b["id"], positions)
                    if ids_out is not None:
                        ids_out.writelines("%d %d\n" % (p, i) for p, i in zip(positions, b["id"]))
                if args.step_ms > 0:
                    time.sleep(args.step_ms / 1000.0)
                asked = time.monotonic()
            seconds = time.monotonic() - started
            counts = verifier.finish_epoch()
            if counts["samples"] == 0 and c.is_end_of_stream():
                break
            complete = counts["samples"] == expected
            print(_json(dict(epoch=epoch, batches=counts["batches"], samples=counts["samples"], expected=expected,
                             unique=counts["unique"], duplicates=counts["duplicates"], corrupt=counts["corrupt"],
                             out_of_order=counts["out_of_order"], order="seeded" if ordered else "producer",
                             start=c.start_mode, start_epoch=c.start_epoch, start_sample=c.start_sample,
                             handoff=c.handoff, **_rank_fields(c), complete=complete,
                             batch_size=args.batch_size, seconds=float(seconds),
                             samples_per_s=counts["samples"] / max(seconds, 1e-9),
                             longest_wait_ms=int(longest_wait * 1000))), flush=True)
            intact = counts["corrupt"] == 0 and counts["out_of_order"] == 0
            exact = counts["samples"] == spe and counts["unique"] == spe and counts["duplicates"] == 0 and intact
            if not intact:
                failure = "epoch %d: %d corrupt and %d out-of-order samples" % (epoch, counts["corrupt"],
                                                                               counts["out_of_order"])
            elif (c.start_mode != stream.ROLLING and complete
                  and (counts["duplicates"] > 0 if args.drop_last else not exact)):
                failure = "epoch %d delivered %d distinct of %d samples with %d duplicates" % (
                    epoch, counts["unique"], spe, counts["duplicates"])
            elif not complete and not c.is_end_of_stream():
                failure = "epoch %d ended after %d of %d samples" % (epoch, counts["samples"], expected)
            if failure is not None or (c.is_end_of_stream() and args.epochs is None):
                break  # asked for more epochs than the stream has: the next says how many it got
        if ids_out is not None:
            ids_out.close()
        if failure is not None:
            raise _Failure(failure)
    return 0


def synthetic_epochs(spec, batch_size):
    """The synthetic stream, batch by batch as the Java SyntheticSource emits it: epoch -> batches."""
    def epoch(e):
        order = spec.order(e)
        for start in range(0, spec.samples, batch_size):
            ids = order[start:start + batch_size]
            yield {"data": spec.fill(ids), "label": spec.labels(ids), "id": ids}
    return epoch


def feed(args):
    from .feeder import TensorProducer
    spec = SyntheticSpec.parse(args.synthetic)
    if spec.dtype == "bfloat16":
        raise ValueError("the feeder declares numpy dtypes; bfloat16 synthetic data is served by tensorsocket serve")
    p = TensorProducer(args.name, None, epochs=args.epochs, samples_per_epoch=spec.samples, description=spec.format(),
                       start_producer=not args.no_start, connect_timeout=args.connect_timeout_s,
                       epoch_loader=synthetic_epochs(spec, args.batch_size), min_consumers=args.min_consumers)
    started = time.monotonic()
    batches = p.run()
    seconds = time.monotonic() - started
    print(_json(dict(event="fed", batches=batches, epochs=args.epochs, seconds=float(seconds),
                     samples_per_s=spec.samples * args.epochs / max(seconds, 1e-9))), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tensorsocket_client")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("consume", help="Consume from a producer, verify every sample, and print one JSON line per "
                                       "epoch.")
    target = c.add_mutually_exclusive_group(required=True)
    target.add_argument("--name", help="Producer name, or grpc://HOST:PORT/NAME (grpc+tls://...) for one served "
                                       "over Arrow Flight on another host (needs pyarrow).")
    target.add_argument("--dir", help="Explicit producer directory instead of a name.")
    c.add_argument("--batch-size", type=int, required=True, help="This consumer's batch size.")
    c.add_argument("--epochs", type=int, help="Epochs to consume (default: until the producer's stream ends).")
    c.add_argument("--drop-last", action="store_true", help="Drop each epoch's last batch if it is short.")
    c.add_argument("--step-ms", type=float, default=0.0, help="Sleep this long per batch, standing in for training.")
    c.add_argument("--connect-timeout-s", type=float, default=DEFAULT_CONNECT_TIMEOUT,
                   help="Wait this long for the producer to appear and answer (default %.0f)." % DEFAULT_CONNECT_TIMEOUT)
    c.add_argument("--batch-timeout-s", type=float, default=120.0, help="Wait this long for any one batch.")
    c.add_argument("--liveness-s", type=float, default=10.0,
                   help="Report the producer as not responding after hearing nothing from it, not even its heartbeat, "
                        "for this long while waiting (default 10).")
    c.add_argument("--wait-for-epoch-start", action="store_true",
                   help="Arriving too late to start at the current epoch's start, wait for the next epoch's start "
                        "instead of starting mid-epoch (exact, or rolling for a source that fixes its own order).")
    c.add_argument("--ids-out", help="Write one line per batch received to this file: its stream position, then its "
                   "samples' ids (a line per sample for a rank of a job).")
    c.add_argument("--job", help="Read as a rank of this data-parallel job: its ranks share each epoch, each an equal "
                   "share (as DistributedSampler deals them).")
    c.add_argument("--rank", type=int, help="This consumer's rank in its --job (default: $RANK, as torchrun sets it).")
    c.add_argument("--world-size", type=int, help="How many ranks its --job has (default: $WORLD_SIZE).")
    c.add_argument("--token", help="Shared token of a remote (grpc://) producer's server (else $TENSORSOCKET_TOKEN).")
    c.add_argument("--token-file", help="Read the shared token from this file.")
    c.add_argument("--trust", help="Trust this PEM certificate for grpc+tls:// (default: the system's).")
    c.add_argument("--silence-timeout-s", type=float, default=2.0,
                   help="A remote server silent this long while a batch is awaited has vanished.")
    c.add_argument("--handoff", choices=("ring", "socket"), default="ring",
                   help="How batches are handed over: ring (a descriptor ring in shared memory; a waiting consumer "
                        "sleeps on a futex) or socket (announced over the control socket) (default ring).")
    c.add_argument("--spin-us", type=float, default=0.0,
                   help="While waiting for a batch, poll the ring this long before sleeping (0 to 1000000).")
    f = sub.add_parser("feed", help="Feed the synthetic stream into a producer started with tensorsocket serve --external.")
    f.add_argument("--name", required=True, help="Producer name.")
    f.add_argument("--synthetic", required=True, metavar="SPEC",
                   help="samples=S,shape=CxHxW,dtype=D,seed=K[,classes=C], as tensorsocket serve --synthetic takes it.")
    f.add_argument("--batch-size", type=int, required=True, help="The loader's batch size.")
    f.add_argument("--epochs", type=int, default=1, help="Epochs to feed (default 1).")
    f.add_argument("--no-start", action="store_true", help="Never start a producer, even with tensorsocket on PATH.")
    f.add_argument("--min-consumers", type=int, default=None,
                   help="The producer it starts holds the first batch until this many consumers are attached.")
    f.add_argument("--connect-timeout-s", type=float, default=60.0, help="Wait this long for the producer.")
    s = sub.add_parser("share-serve", help="The process share() starts: builds the factory's loader and feeds it until "
                                           "the producer stops (its linger after the last consumer).")
    s.add_argument("--name", required=True)
    s.add_argument("--factory", required=True, help="module:function returning the loader.")
    s.add_argument("--kwargs", default="{}", help="The factory's keyword arguments, as JSON.")
    s.add_argument("--description", required=True, help="The fingerprint share() checks.")
    s.add_argument("--linger", type=float, required=True, help="Seconds the producer stays after its last consumer.")
    s.add_argument("--producer-options", default="{}", help="TensorProducer options, as JSON.")
    s.add_argument("--status-fd", type=int, help="Write the exit status here (to the trial that started it).")
    args = p.parse_args(argv)
    if args.command == "share-serve" and args.status_fd is not None:
        from ._share_start import write_status
        code = 1
        try:
            code = _run(args)
            return code
        finally:
            write_status(args.status_fd, code)
    return _run(args)


def _run(args):
    try:
        if args.command == "share-serve":
            from .share import serve
            return serve(args.name, args.factory, json.loads(args.kwargs), args.description, args.linger,
                         json.loads(args.producer_options))
        return feed(args) if args.command == "feed" else consume(args)
    except (TensorSocketError, _Failure, ValueError, OSError, ImportError) as e:
        print("tensorsocket: error: %s" % e, file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("tensorsocket: error: interrupted", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
