"""A DistributedDataParallel training script as torchrun runs it, reading its rank's share of a shared producer.

    python3 -m torch.distributed.run --standalone --nproc_per_node W ddp_train.py --name N --job J --epochs E \\
        --batch-size B

Every rank trains a small model (gloo, CPU) on the batches of ``torch_data.loader(..., job=J)``, its rank and world
size taken from torchrun's RANK and WORLD_SIZE. After each epoch the ranks gather the ids they saw; rank 0 prints one
JSON line per epoch: how many samples the job saw, how many distinct, and the rank's start.
"""
import argparse
import datetime
import json

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from tensorsocket_client import torch_data


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--no-close", action="store_true", help="end as a plain DataLoader script does, leaving the loader"
                   " open (the process group is still destroyed, as torch asks of every script)")
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    loader = torch_data.loader(a.name, a.batch_size, names=("data", "label", "id"), job=a.job, copy=True)
    consumer = loader.dataset.consumer
    features = consumer.tensors[0][2]
    model = DistributedDataParallel(torch.nn.Linear(int(torch.tensor(features).prod()), 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(a.epochs):
        ids, steps, loss_sum = [], 0, 0.0
        for data, label, sample_id in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(data.reshape(len(data), -1)), label % 10)
            loss.backward()  # the all-reduce: every rank takes the same number of steps
            opt.step()
            ids.extend(int(i) for i in sample_id)
            steps += 1
            loss_sum += float(loss)
        gathered = [None] * world
        dist.all_gather_object(gathered, ids)
        if rank == 0:
            seen = [i for part in gathered for i in part]
            print(json.dumps(dict(epoch=epoch, ranks=world, steps=steps, samples=len(seen), unique=len(set(seen)),
                                  per_rank=",".join(str(len(part)) for part in gathered), start=consumer.start_mode,
                                  loss=loss_sum / max(steps, 1))), flush=True)
    if not a.no_close:
        loader.dataset.close()
    # torch's own rule, whatever the loader: a gloo process group left to the interpreter's exit may abort it
    # ("terminate called without an active exception", SIGABRT), its worker threads still running; and one torn down
    # while the other rank still talks to it did the same in a CI run: both ranks meet first (bounded), then tear down
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=60))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
