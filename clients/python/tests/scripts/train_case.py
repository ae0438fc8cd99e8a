"""A trainer written as users of the reference implementation write it, checking every sample it gets:

    python3 train_case.py NAME BATCH_SIZE EPOCHS

    consumer = TensorConsumer(NAME, batch_size=...)
    for epoch in range(EPOCHS):
        for i, batch in enumerate(consumer):
            inputs, labels, ids = batch        # tuple unpacking, in the loader's order, as torch tensors

The producer serves the synthetic data set (data, label, id); each sample is compared with the generator.
Prints one JSON line per epoch; exits 1 on the first wrong sample or an epoch that is not exact.
"""
import json
import sys

import numpy as np
import torch

from tensorsocket_client import TensorConsumer
from tensorsocket_client.synthetic import SyntheticSpec


def main():
    name, batch_size, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with TensorConsumer(name, batch_size=batch_size) as consumer:
        spec = SyntheticSpec.parse(consumer.source_description)
        for epoch in range(epochs):
            seen = []
            batches = 0
            for i, batch in enumerate(consumer):
                inputs, labels, ids = batch
                assert all(isinstance(t, torch.Tensor) for t in (inputs, labels, ids)), [type(t) for t in batch]
                assert inputs.shape[0] == len(batch) == labels.shape[0], (inputs.shape, len(batch))
                got = ids.numpy()
                if not (np.array_equal(inputs.numpy(), spec.fill(got)) and np.array_equal(labels.numpy(), spec.labels(got))):
                    print("epoch %d batch %d: samples differ from the generator's" % (epoch, i), file=sys.stderr)
                    return 1
                seen.extend(got.tolist())
                batches += 1
            exact = sorted(seen) == list(range(spec.samples))
            print(json.dumps({"epoch": epoch, "batches": batches, "len": len(consumer), "samples": len(seen),
                              "exact": exact, "start": consumer.start_mode}), flush=True)
            if not exact:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
