"""K trainers of one JPEG pipeline with a cache of decoded images: this project against TensorFlow's tf.data service.

Both run the same pipeline on a folder of JPEGs (ImageFolder layout): decode once and keep the decoded images, then
every epoch RandomResizedCrop(224) + horizontal flip + ImageNet normalisation into float32 CHW batches of 32, served to
K trainers that each read the whole stream. tf.data service at its best: ``cache()`` after decoding, the augmentation
after the cache, dispatcher and worker in one process, its cross-trainer cache so that the K trainers share one
stream, compression off. This project: ``tensorsocket serve --images DIR --cache-mb N`` and K Python consumers.

    python3 jpeg_service_bench.py --images DIR [--trainers 3] [--seconds 15] [--warm-seconds 8]
        [--peer-python PYTHON]   # a Python with tensorflow; without one the peer's row is skipped, saying so
        [--launcher PATH]        # the tensorsocket command (default: the checkout's bin/tensorsocket)

Each trainer reads for the warm-up (the first epoch decodes and fills the cache), then all count the batches of one
window of --seconds. Prints one JSON row per side: samples/s in all and per trainer, CPU ms per sample delivered (the
server's processes and the trainers'), and the ratio of the two sides.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_remote import has_tensorflow, measure, run_tf_service, stop, tf_server, trainer_loop  # noqa: E402

BATCH = 32
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
TRANSFORM = "RandomResizedCrop(224), RandomHorizontalFlip(0.5), Normalize(imagenet)"


# ------------------------------------------------------------------------------------------- peer: tf.data service

def tf_dataset(images):
    import tensorflow as tf
    files = sorted(str(p) for p in Path(images).glob("*/*") if p.suffix.lower() in (".jpg", ".jpeg"))
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.map(lambda f: tf.io.decode_jpeg(tf.io.read_file(f), channels=3), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache().shuffle(len(files), seed=42, reshuffle_each_iteration=True).repeat()
    mean = tf.constant(MEAN, tf.float32)
    std = tf.constant(STD, tf.float32)

    def augment(img):
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            tf.shape(img), bounding_boxes=tf.zeros([1, 0, 4]), min_object_covered=0.0,
            aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0), use_image_if_no_bounding_boxes=True)
        out = tf.image.resize(tf.slice(img, begin, size), (224, 224))
        out = tf.image.random_flip_left_right(out)
        out = (out / 255.0 - mean) / std
        return tf.transpose(out, [2, 0, 1])

    return ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH).prefetch(2)


def tf_batches(address, images, trainer_id):
    import tensorflow as tf
    ds = tf_dataset(images).apply(tf.data.experimental.service.distribute(
        processing_mode=tf.data.experimental.service.ShardingPolicy.OFF, service=address, job_name="shared",
        compression=None,
        cross_trainer_cache=tf.data.experimental.service.CrossTrainerCache(trainer_id="trainer-%d" % trainer_id)))
    for x in ds:
        yield x.numpy()


def run_peer(python, images, k, seconds, warm_seconds):
    return run_tf_service(python, os.path.abspath(__file__),
                          ["--images", images, "--warm-seconds", str(warm_seconds)], k, seconds)


# ------------------------------------------------------------------------------------------- this project

def tensorsocket_batches(name):
    from tensorsocket_client import TensorConsumer
    with TensorConsumer(name, batch_size=BATCH, connect_timeout=60) as c:
        while True:
            for b in c:
                yield b["image"]


def run_tensorsocket(launcher, images, k, seconds, warm_seconds, cache_mb):
    base = tempfile.mkdtemp(prefix="tensorsocket-jpegbench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    env = dict(os.environ, TENSORSOCKET_BASE=base)
    log = open(os.path.join(base, "producer.log"), "w")  # noqa: SIM115 (closed below)
    producer = subprocess.Popen([launcher, "serve", "--name", "jpegs", "--images", images, "--batch-size", str(BATCH),
                                 "--epochs", "0", "--cache-mb", str(cache_mb), "--transform", TRANSFORM,
                                 "--min-consumers", str(k)], env=env, stdout=subprocess.DEVNULL, stderr=log)
    me = os.path.abspath(__file__)
    trainers = []
    try:
        for _ in range(k):
            trainers.append(subprocess.Popen(
                [sys.executable, me, "--role", "ts-trainer", "--name", "jpegs", "--warm-seconds", str(warm_seconds)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
        return measure([producer], trainers, seconds)
    finally:
        stop(trainers + [producer])
        log.close()
        subprocess.run(["rm", "-rf", base], check=False)


# ------------------------------------------------------------------------------------------- orchestrator

def row(side, k, results, server_cpu):
    rates = [r["batches"] * BATCH / r["seconds"] for r in results]
    cpu = server_cpu + sum(r["cpu_s"] for r in results)
    samples = sum(r["batches"] for r in results) * BATCH
    return {"side": side, "trainers": k, "samples_per_s": round(sum(rates), 1),
            "samples_per_s_per_trainer": round(min(rates), 1), "cpu_ms_per_sample": round(1e3 * cpu / max(samples, 1), 3),
            "server_cpu_share": round(server_cpu / max(cpu, 1e-9), 2)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", help="an ImageFolder of JPEGs")
    p.add_argument("--trainers", type=int, default=3)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--warm-seconds", type=float, default=8)
    p.add_argument("--cache-mb", type=int, default=1024, help="this project's cache (default 1024)")
    p.add_argument("--peer-python", default=sys.executable, help="a Python with tensorflow (default: this one)")
    p.add_argument("--launcher", default=str(Path(__file__).resolve().parents[3] / "bin" / "tensorsocket"))
    p.add_argument("--role", choices=("bench", "tf-server", "tf-trainer", "ts-trainer"), default="bench",
                   help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--address", help=argparse.SUPPRESS)
    p.add_argument("--trainer-id", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--name", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.role == "tf-server":
        return tf_server(a.port)
    if a.role == "tf-trainer":
        return trainer_loop(tf_batches(a.address, a.images, a.trainer_id), a.warm_seconds)
    if a.role == "ts-trainer":
        return trainer_loop(tensorsocket_batches(a.name), a.warm_seconds)
    if not a.images:
        p.error("--images DIR is needed")
    ours = row("tensorsocket", a.trainers,
               *run_tensorsocket(a.launcher, a.images, a.trainers, a.seconds, a.warm_seconds, a.cache_mb))
    print(json.dumps(ours), flush=True)
    if not has_tensorflow(a.peer_python):
        print("SKIPPED the tf.data service row: %s cannot import tensorflow (give --peer-python, e.g. a virtual"
              " environment with tensorflow-cpu)" % a.peer_python, file=sys.stderr)
        return 0
    peer = row("tf.data service", a.trainers, *run_peer(a.peer_python, a.images, a.trainers, a.seconds,
                                                        a.warm_seconds))
    print(json.dumps(peer), flush=True)
    print(json.dumps({"summary": True, "samples_per_s_ratio": round(ours["samples_per_s"] / peer["samples_per_s"], 2),
                      "cpu_per_sample_ratio": round(ours["cpu_ms_per_sample"] / peer["cpu_ms_per_sample"], 2)}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
