"""A loader's batch as the named numpy arrays a feeder writes into a slot: which tensors, in which order, of which
of the protocol's dtypes (docs/PROTOCOL.md, section 3), and what cannot be carried, said before anything is sent."""

import os
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import dtypes


def _dtype_code(arr, name: str = "") -> int:
    dt = np.dtype(arr.dtype)
    code = dtypes.code_of(dt)
    if code is None:
        what = {"U": "strings", "S": "byte strings", "O": "Python objects", "c": "complex numbers",
                "M": "datetimes", "m": "time deltas", "V": "records"}.get(dt.kind, "values")
        tensor = "tensor '%s' of the loader's batch" % name if name else "a tensor"
        raise TypeError("%s holds %s (numpy dtype %s), which TensorSocket cannot carry; it carries uint8, int8..int64, "
                        "float16/32/64, bfloat16 and bool. Leave it out by naming the tensors to share (names=(...)), "
                        "or turn it into numbers in the dataset or collate_fn (for example class indices)"
                        % (tensor, what, dt))
    return code


def _as_numpy(x) -> np.ndarray:
    """A CPU numpy view of a batch tensor (no copy for CPU torch tensors and numpy arrays)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch.Tensor
        try:
            return x.numpy()  # the common case, at once: a CPU tensor of a numpy dtype without grad
        except (RuntimeError, TypeError):
            pass  # needs grad detached, a copy off the GPU, or bfloat16's view
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy()
    return np.asarray(x)


def _named(batch, names: Optional[Sequence[str]]) -> List[Tuple[str, np.ndarray]]:
    if isinstance(batch, Mapping):
        if names is None:
            return [(str(k), _as_numpy(v)) for k, v in batch.items()]
        missing = [n for n in names if n not in batch]
        if missing:
            raise ValueError("the loader's batch has keys %s; names=%s asks for %s" % (list(batch), list(names), missing))
        return [(n, _as_numpy(batch[n])) for n in names]
    if isinstance(batch, (tuple, list)):
        arrays = [_as_numpy(v) for v in batch]
    else:
        arrays = [_as_numpy(batch)]
    if names is None:
        names = ("data", "label") if len(arrays) == 2 else tuple("t%d" % i for i in range(len(arrays)))
        if len(arrays) == 1:
            names = ("data",)
    if len(names) != len(arrays):
        raise ValueError("the loader yields %d tensors per batch but names=%s has %d" % (len(arrays), list(names), len(names)))
    return list(zip(names, arrays))


def _copy_hint(batch_bytes: int, environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """What to tell a user whose batches this process copies through the cache because the C library misjudges the
    cache's size (the rule of ``tensorsocket_bundle.copy_tuning``, where that module is at hand), or None."""
    try:
        import tensorsocket_bundle as bundle
    except ImportError:
        return None
    tuning = bundle.copy_tuning(environ)
    if tuning is None or batch_bytes < int(tuning.rsplit("=", 1)[1]):
        return None
    return ("batches of %.1f MB are copied into shared memory through the processor's cache, as the C library here "
            "misjudges its size; start Python with GLIBC_TUNABLES=%s to copy them past it (1.6 times as fast where "
            "measured), or with any GLIBC_TUNABLES, even empty, to keep this and not be told" % (batch_bytes / 1e6, tuning))


def _check_carriable(tensors: List[Tuple[str, np.ndarray]]) -> None:
    """Refuses, naming the tensor, what a batch cannot carry: before anything is declared or published."""
    for name, a in tensors:
        _dtype_code(a, name)
        if a.ndim < 1:
            raise TypeError("tensor '%s' of the loader's batch is a single %s, not a batch of samples (no batch "
                            "dimension); leave it out with names=(...) or give it one value per sample" % (name, a.dtype))


def _batch_problem(tensors: List[Tuple[str, np.ndarray]], spec, n: int, epoch: int) -> Optional[str]:
    """What is wrong with a batch of ``n`` samples against the declared ``spec`` (name, dtype, sample shape per
    tensor), or None."""
    if len(tensors) != len(spec):
        return "a batch of epoch %d holds %d tensors, the first held %d" % (epoch, len(tensors), len(spec))
    for (name, a), (sname, sdt, sshape) in zip(tensors, spec):
        if name != sname or a.dtype != sdt or a.shape[1:] != sshape or len(a) != n:
            return ("tensor '%s' changed in epoch %d: %s %s where the declaration says '%s' %s %s"
                    % (name, epoch, a.dtype, tuple(a.shape[1:]), sname, sdt, tuple(sshape)))
    return None
