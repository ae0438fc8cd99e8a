"""Lightning checkpoints a shared loader with the model and resumes it mid-epoch: a ``Trainer.fit`` over ``share()``
saving every 5 steps stops in its second epoch; a new ``fit(ckpt_path=...)`` from the last checkpoint reads the rest
of that epoch (Lightning calls the loader's ``load_state_dict``), so the samples before the checkpoint and after it
are the data set once."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from bench_launcher import launcher_or_skip

try:
    import lightning  # noqa: F401
except ImportError:  # pragma: no cover - the torch 2 run of .ci/python-checks has it
    lightning = None

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")

FIT = r"""
import json, os, sys, torch, lightning
from lightning.pytorch.callbacks import ModelCheckpoint
from tensorsocket_client import share

mode, ckdir = sys.argv[1], sys.argv[2]
seen = []


class Model(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(48, 10)

    def training_step(self, batch, index):
        x, y, i = batch
        seen.extend(i.tolist())
        if mode == "first" and len(seen) >= 1000 + 7 * 20:
            raise SystemExit(0)  # as a kill two steps after the last checkpoint
        return torch.nn.functional.cross_entropy(self.linear(x.flatten(1)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


loader = share("lit", "share_loaders:synthetic", batch_size=20, kwargs={"samples": 1000}, seed=3, linger=3)
trainer = lightning.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_progress_bar=False,
                            enable_model_summary=False, num_sanity_val_steps=0,
                            callbacks=[ModelCheckpoint(dirpath=ckdir, every_n_train_steps=5, save_top_k=-1)])
if mode == "first":
    try:
        trainer.fit(Model(), train_dataloaders=loader)
    finally:
        print(json.dumps(seen), flush=True)
else:
    last = max((f for f in os.listdir(ckdir) if f.endswith(".ckpt")),
               key=lambda f: os.path.getmtime(os.path.join(ckdir, f)))
    trainer.fit(Model(), train_dataloaders=loader, ckpt_path=os.path.join(ckdir, last))
    print(json.dumps({"from": last, "seen": seen}), flush=True)
"""


@unittest.skipIf(lightning is None, "needs lightning")
class LightningResumeTest(unittest.TestCase):
    def test_fit_resumed_from_a_mid_epoch_checkpoint_reads_the_rest_of_that_epoch(self):
        launcher_or_skip(self)
        base = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        ckdir = tempfile.mkdtemp()
        env = dict(os.environ, TENSORSOCKET_BASE=base, PYTHONPATH=os.pathsep.join([SCRIPTS] + sys.path))
        try:
            first = subprocess.run([sys.executable, "-c", FIT, "first", ckdir], env=env, capture_output=True,
                                   text=True, timeout=300)
            self.assertEqual(0, first.returncode, first.stderr)
            before = json.loads(first.stdout.splitlines()[-1])
            second = subprocess.run([sys.executable, "-c", FIT, "second", ckdir], env=env, capture_output=True,
                                    text=True, timeout=300)
            self.assertEqual(0, second.returncode, second.stderr)
            resumed = json.loads(second.stdout.splitlines()[-1])
            self.assertEqual("epoch=1-step=55.ckpt", resumed["from"], "the last checkpoint: 5 steps into epoch 1")
            epoch1 = before[1000:1100] + resumed["seen"]  # the 5 steps of 20 before it, then the rest
            self.assertEqual(list(range(1000)), sorted(epoch1), "epoch 1 across the resume is the data set once")
        finally:
            shutil.rmtree(base, ignore_errors=True)
            shutil.rmtree(ckdir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
