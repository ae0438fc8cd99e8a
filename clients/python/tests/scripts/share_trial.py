"""One trial of a sweep, as a sweep engine starts it: the same line in every trial shares one loader.

    python3 share_trial.py NAME --epochs E --batch-size B [--kwargs JSON] [--linger S] [--factory module:fn]
                           [--after FILE] [--hold FILE] [--augment SCALE] [--job J --rank R --world-size W]

Prints one JSON line per epoch (samples, distinct ids, start mode, the producer's pid) and checks each epoch is one
pass over the data set. A test orders trials without guessing how long they take to start: ``--after FILE`` makes a
trial that has imported everything print ``ready`` and call share() only once FILE exists; ``--hold FILE`` makes it
wait after its first epoch until FILE exists (within the producer's stall timeout, 30 s). ``--augment SCALE``: the
trial augments the shared samples itself (``share(..., augment=SampleAugment(Jitter(SCALE), seed=SCALE's digits))``)
and checks every sample of every epoch against its private pipeline over the factory's data set (``augmented_equal``),
printing a digest of what it trained on, sample by sample in id order (``digest``); ``--resume-epoch E`` makes its
epochs count from E (``set_epoch``), as a trial resumed from a checkpoint.
"""
import argparse
import hashlib
import json
import os
import sys
import time

from tensorsocket_client import share


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("--factory", default="share_loaders:synthetic")
    p.add_argument("--kwargs", default="{}")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--linger", type=float, default=60.0)
    p.add_argument("--step-ms", type=float, default=0.0)
    p.add_argument("--after")
    p.add_argument("--hold")
    p.add_argument("--augment", type=float)
    p.add_argument("--resume-epoch", type=int, default=0, help="with --augment: this trial's epochs count from this")
    p.add_argument("--job")
    p.add_argument("--rank", type=int)
    p.add_argument("--world-size", type=int)
    a = p.parse_args()
    augment, private = None, None
    if a.augment is not None:
        import share_loaders

        from tensorsocket_client.augment import SampleAugment
        augment = SampleAugment(share_loaders.Jitter(a.augment), seed=int(a.augment * 1000))
        factory = getattr(share_loaders, a.factory.partition(":")[2])
        private = augment.over(factory(**json.loads(a.kwargs)).dataset)
    if a.after:
        print("ready", flush=True)
        wait_for(a.after, 300)
    t0 = time.monotonic()
    ranks = dict(job=a.job, rank=a.rank, world_size=a.world_size) if a.job else {}
    loader = share(a.name, a.factory, batch_size=a.batch_size, kwargs=json.loads(a.kwargs), linger=a.linger,
                   augment=augment, **ranks)
    consumer = loader.dataset.consumer
    if a.resume_epoch:
        loader.dataset.set_epoch(a.resume_epoch)
    print(json.dumps(dict(event="attached", seconds=time.monotonic() - t0, producer_pid=consumer._welcome.producer_pid,
                          source=consumer.source_description)), flush=True)
    n = consumer.samples_per_epoch
    for epoch in range(a.epochs):
        ids = []
        equal, rows = 0, {}
        if private is not None:
            private.set_epoch(a.resume_epoch + epoch)
        for data, _label, sample_id in loader:
            ids.extend(int(i) for i in sample_id)
            if private is not None:
                for row, i in zip(data, sample_id.tolist()):
                    equal += int(bool((row == private[i][0]).all()))
                    rows[i] = hashlib.sha256(row.numpy().tobytes()).digest()
            if a.step_ms:
                time.sleep(a.step_ms / 1000.0)
        exact = len(ids) == n and len(set(ids)) == n
        line = dict(epoch=epoch, samples=len(ids), unique=len(set(ids)), exact=exact, start=consumer.start_mode,
                    id_sum=sum(ids))
        if private is not None:
            digest = hashlib.sha256(b"".join(rows[i] for i in sorted(rows)))  # whatever order the samples came in
            line.update(augmented_equal=equal, digest=digest.hexdigest()[:16])
        print(json.dumps(line), flush=True)
        if not exact:
            print("epoch %d is not one pass over the %d samples" % (epoch, n), file=sys.stderr)
            return 1
        if epoch == 0 and a.hold:
            wait_for(a.hold, 25)
    loader.dataset.close()
    return 0


def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit("%s did not appear within %d s" % (path, seconds))
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main())
