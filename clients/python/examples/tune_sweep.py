"""A Ray Tune sweep over learning rate and batch size with the ASHA scheduler, every trial reading one shared loader.

    python3 tune_sweep.py [--trials 4] [--epochs 3] [--lightning] [--nodes 2] [--upstream] [--private] [--pbt]

Each trial calls ``tensorsocket_client.ray.share(...)`` where it would build its DataLoader: the first trial on a host
starts the host's producer, the others attach (a second sweep running this script beside it too); ASHA stops trials
early and starts new ones, which join mid-epoch and still get exact epochs. ``--lightning`` makes one trial a Lightning
``Trainer.fit``; ``--nodes 2`` runs the sweep on a cluster of two Ray nodes simulated on this machine
(``ray.cluster_utils.Cluster``), one producer per node (``per_node=True``, as separate hosts); ``--private`` gives
each trial its own DataLoader instead (the baseline). Needs ray[tune], torch, and lightning for ``--lightning``.
Prints one JSON line per trial epoch and a summary.

``--pbt``: Population Based Training instead, which pauses trials and restarts them from checkpoints, their own or
another trial's: each trial checkpoints mid-epoch (a ``tune.Checkpoint`` holding its model, its optimizer and the
loader's ``state_dict()``), and a trial restored from one calls ``load_state_dict()`` and reads the rest of that epoch
(every sample not read before the checkpoint, once) before whole epochs. It prints the ids each epoch held across
restores, so every epoch is checked whole.

Across hosts (``--upstream``): where GPU nodes have too little CPU to decode, one node serves the loader over Arrow
Flight (``serve_upstream(...)``, here the head node on loopback; in a real cluster a CPU node, ``flight="0.0.0.0:8815"``
and a token file) and every trial passes ``upstream=`` to ``share``: each node then runs a relay of it, one network
stream per node, its trials reading the relay from shared memory as here.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import ray
import torch
from ray import tune
from ray.tune.schedulers import ASHAScheduler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # sweep_data, beside this script

SHARE = "sweep-images"


def _model():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))


def _step(model, opt, x, y):
    """One training step; its loss."""
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return float(loss)


def trainable(config):
    import sweep_data

    from tensorsocket_client.ray import share

    t0 = time.monotonic()
    if config["private"]:
        loader, consumer = sweep_data.images(**config["data"]), None
    else:
        loader = share(SHARE, "sweep_data:images", batch_size=config["batch_size"], kwargs=config["data"],
                       linger=config["linger"], upstream=config["upstream"], per_node=config["per_node"])
        consumer = loader.dataset.consumer
    attach_s = time.monotonic() - t0
    info = dict(node=ray.get_runtime_context().get_node_id()[:12], attach_s=attach_s,
                producer=consumer.producer if consumer else None,
                producer_pid=consumer._welcome.producer_pid if consumer else None)
    if config["kind"] == "lightning":
        return _lightning(config, loader, consumer, info)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        ids, loss_sum, steps = [], 0.0, 0
        for x, y, i in loader:
            loss_sum += _step(model, opt, x, y)
            ids.extend(i.tolist())
            steps += 1
        tune.report(dict(info, epoch=epoch, loss=loss_sum / steps, samples=len(ids), unique=len(set(ids)),
                         start=consumer.start_mode if consumer else "private", kind="torch",
                         stream_epoch=consumer.epoch if consumer else -1))


def trainable_pbt(config):
    """A trial that checkpoints every few steps, mid-epoch, and resumes from the checkpoint PBT restores it from."""
    import pickle

    from tensorsocket_client.ray import share

    loader = share(SHARE, "sweep_data:images", batch_size=config["batch_size"], kwargs=config["data"],
                   linger=config["linger"])
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    epoch, ids, restored, mid = 0, [], 0, 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d, open(os.path.join(d, "state.pkl"), "rb") as f:
            saved = pickle.load(f)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        for g in opt.param_groups:
            g["lr"] = config["lr"]  # PBT's mutation of the trial it restores
        loader.load_state_dict(saved["loader"])  # the rest of the checkpoint's epoch comes next
        epoch, ids, restored = saved["epoch"], saved["ids"], saved["restored"] + 1
        mid = saved["mid"] + (1 if ids else 0)  # restored inside an epoch, some of it read before the checkpoint
    consumer = loader.dataset.consumer
    step, losses = 0, []
    while epoch < config["epochs"]:
        for x, y, i in loader:
            losses.append(_step(model, opt, x, y))
            ids.extend(i.tolist())
            step += 1
            if step % config["checkpoint_every"] == 0:  # mid-epoch: what PBT pauses at and restores from
                _report_pbt(model, opt, loader, epoch, ids, (restored, mid), losses, None)
        # its end, with a checkpoint standing at the next epoch's start
        _report_pbt(model, opt, loader, epoch, [], (restored, mid), losses,
                    dict(epoch=epoch, samples=len(ids), unique=len(set(ids)), restored=restored, restored_mid_epoch=mid,
                         start=consumer.start_mode, kind="pbt", stream_epoch=consumer.epoch,
                         producer_pid=consumer._welcome.producer_pid))
        epoch, ids = epoch + 1, []


def _report_pbt(model, opt, loader, epoch, ids, restored, losses, end):
    import pickle

    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "state.pkl"), "wb") as f:
            pickle.dump(dict(model=model.state_dict(), opt=opt.state_dict(), loader=loader.state_dict(),
                             epoch=epoch + (1 if end else 0), ids=ids, restored=restored[0], mid=restored[1]), f)
        metrics = dict(loss=sum(losses[-20:]) / max(1, len(losses[-20:])), **(end or {}))
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))


def _lightning(config, loader, consumer, info):
    import lightning

    class Module(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.model, self.ids, self.losses = _model(), [], []

        def training_step(self, batch, _):
            x, y, i = batch
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.ids.extend(i.tolist())
            self.losses.append(float(loss))
            return loss

        def on_train_epoch_end(self):
            tune.report(dict(info, epoch=self.current_epoch, loss=sum(self.losses) / len(self.losses),
                             samples=len(self.ids), unique=len(set(self.ids)),
                             start=consumer.start_mode if consumer else "private", kind="lightning",
                             stream_epoch=consumer.epoch if consumer else -1))
            self.ids, self.losses = [], []

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=config["lr"])

    trainer = lightning.Trainer(max_epochs=config["epochs"], accelerator="cpu", devices=1, logger=False,
                                enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                                num_sanity_val_steps=0)
    trainer.fit(Module(), train_dataloaders=loader)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=4)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--lightning", action="store_true", help="Make the last trial a Lightning Trainer.fit.")
    p.add_argument("--nodes", type=int, default=1, help="Simulate a cluster of this many Ray nodes on this machine.")
    p.add_argument("--private", action="store_true", help="Each trial its own DataLoader (the baseline).")
    p.add_argument("--upstream", action="store_true",
                   help="Serve the loader from the head node over Flight; each node's trials read a relay of it.")
    p.add_argument("--linger", type=float, default=10.0)
    p.add_argument("--decode-us", type=int, default=0, help="CPU microseconds each sample costs to load.")
    p.add_argument("--pbt", action="store_true",
                   help="Population Based Training: trials paused and restored from mid-epoch checkpoints.")
    a = p.parse_args()
    # The trials' workers see where producers live, which launcher starts one, and the client (if not installed).
    env = {"env_vars": {k: v for k, v in os.environ.items()
                        if k.startswith("TENSORSOCKET_") or k in ("PATH", "PYTHONPATH", "JAVA_HOME")}}
    cluster = None
    if a.nodes > 1:
        from ray.cluster_utils import Cluster
        cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=1, include_dashboard=False))
        for _ in range(a.nodes - 1):
            cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, runtime_env=env, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=2, include_dashboard=False, runtime_env=env, log_to_driver=False,
                 _node_ip_address="127.0.0.1")
    kinds = ["torch"] * a.trials
    if a.lightning:
        kinds[-1] = "lightning"
    data = dict(samples=a.samples, seed=1, decode_us=a.decode_us)
    upstream = None
    if a.upstream and not a.private:
        from tensorsocket_client.ray import serve_upstream
        # its default linger (60 s) outlasts the nodes' relays starting; stop() ends it after the sweep
        upstream = serve_upstream(SHARE, "sweep_data:images", kwargs=data, flight="127.0.0.1:%d" % _free_port())
    space = dict(lr=tune.loguniform(1e-3, 1e-1), batch_size=tune.choice([32, 64]), kind=tune.grid_search(kinds),
                 epochs=a.epochs, private=a.private, linger=a.linger, data=data, upstream=upstream,
                 per_node=a.nodes > 1)  # nodes simulated on one host keep their producers apart, as hosts would
    if a.pbt:
        space = dict(lr=tune.loguniform(1e-3, 1e-1), batch_size=32, epochs=a.epochs, linger=a.linger, data=data,
                     checkpoint_every=5)
    try:
        return _sweep_pbt(a, space) if a.pbt else _sweep(a, space)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _remote_streams(upstream):
    """The upstream's consumers that are relays reading it over Flight (``status grpc://...``), or None."""
    import subprocess

    from tensorsocket_client.directory import launcher_command
    argv, env = launcher_command()
    out = subprocess.run(argv + ["status", upstream, "--json", "--once"], capture_output=True, text=True, timeout=60,
                         env=env)
    if out.returncode != 0:
        return None
    return sum(1 for c in json.loads(out.stdout)["consumers"] if c["client"].startswith("flight "))


def _sweep_pbt(a, space):
    """PBT over the learning rate: every 4 reports it restores the worse half of the trials from the better half's
    checkpoints."""
    from ray.tune.schedulers import PopulationBasedTraining

    started = time.monotonic()
    pbt = PopulationBasedTraining(time_attr="training_iteration", metric="loss", mode="min", perturbation_interval=4,
                                  quantile_fraction=0.5, hyperparam_mutations={"lr": tune.loguniform(1e-3, 1e-1)})
    tuner = tune.Tuner(
        tune.with_resources(trainable_pbt, {"cpu": 1}), param_space=space,
        tune_config=tune.TuneConfig(scheduler=pbt, num_samples=a.trials),
        run_config=tune.RunConfig(storage_path=tempfile.mkdtemp(prefix="tune-"), verbose=0))  # keeps every checkpoint:
    # PBT restores a trial from another's, which a retention limit may have deleted meanwhile
    results = tuner.fit()
    epochs = []
    for r in results:
        history = r.metrics_dataframe.to_dict("records") if r.metrics_dataframe is not None else []
        for h in history:
            if h.get("kind") == "pbt" and h.get("samples") == h.get("samples"):  # an epoch's end (NaN elsewhere)
                epochs.append(h)
                print(json.dumps({k: h[k] for k in ("kind", "epoch", "samples", "unique", "restored",
                                                     "restored_mid_epoch", "start",
                                                     "producer_pid", "loss") if k in h}), flush=True)
    errors = sum(1 for r in results if r.error)
    print(json.dumps(dict(summary=True, trials=len(results), errors=errors, wall_s=time.monotonic() - started,
                          epochs=len(epochs), restored=int(max((e.get("restored", 0) for e in epochs), default=0)),
                          restored_mid_epoch=int(max((e.get("restored_mid_epoch", 0) for e in epochs), default=0)),
                          whole=all(e["samples"] == a.samples == e["unique"] for e in epochs))), flush=True)
    from tensorsocket_client.ray import stop
    stop(SHARE)
    return 1 if errors else 0


def _sweep(a, space):
    started = time.monotonic()
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}), param_space=space,
        tune_config=tune.TuneConfig(scheduler=ASHAScheduler(metric="loss", mode="min", max_t=a.epochs, grace_period=1,
                                                            reduction_factor=2)),
        run_config=tune.RunConfig(storage_path=tempfile.mkdtemp(prefix="tune-"), verbose=0))
    results = tuner.fit()
    wall = time.monotonic() - started
    trials, stream_epochs = [], set()
    for r in results:
        history = r.metrics_dataframe.to_dict("records") if r.metrics_dataframe is not None else []
        for h in history:
            print(json.dumps({k: h[k] for k in ("kind", "epoch", "samples", "unique", "start", "node", "producer",
                                                  "producer_pid", "attach_s", "loss") if k in h}), flush=True)
            # a relay's epochs are its upstream's: loaded once for every node
            stream_epochs.add(h.get("stream_epoch") if space["upstream"] else (h.get("node"), h.get("stream_epoch")))
        trials.append(dict(epochs=len(history), error=str(r.error) if r.error else None))
    # Samples loaded: each trial's every epoch with private loaders; each producer epoch some trial read, shared
    # (a producer epoch that no trial read to its end, the last one say, is not counted).
    loaded = (sum(t["epochs"] for t in trials) if a.private else len(stream_epochs)) * a.samples
    summary = dict(summary=True, trials=len(trials), errors=sum(1 for t in trials if t["error"]), wall_s=wall,
                   private=a.private, samples_loaded=loaded)
    if space["upstream"]:
        summary.update(upstream=space["upstream"], network_streams=_remote_streams(space["upstream"]))
    print(json.dumps(summary), flush=True)
    if not a.private:
        from tensorsocket_client.ray import stop
        stop(SHARE)  # the sweep is over: each node's producer goes now rather than after its linger
    return 1 if any(t["error"] for t in trials) else 0


if __name__ == "__main__":
    sys.exit(main())
