"""The synthetic data set, bit for bit as the Java producer generates it (io.tensorsocket.source.
SyntheticSpec): sample content is a deterministic function of (seed, sample id), and the per-epoch
order is a Fisher-Yates shuffle driven by java.util.SplittableRandom."""

import numpy as np

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
PREFIX = "synthetic:"

_DTYPES = {"uint8": "u1", "u8": "u1", "byte": "u1", "int8": "i1", "i8": "i1", "int16": "<i2", "i16": "<i2",
           "short": "<i2", "int32": "<i4", "i32": "<i4", "int": "<i4", "int64": "<i8", "i64": "<i8", "long": "<i8",
           "float16": "<f2", "f16": "<f2", "half": "<f2", "bfloat16": "bf16", "bf16": "bf16", "float32": "<f4",
           "f32": "<f4", "float": "<f4", "float64": "<f8", "f64": "<f8", "double": "<f8", "bool": "?",
           "boolean": "?"}


def _finish(z):
    """SplitMix64's finaliser (Stafford variant 13), on a Python int."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def mix(a, b):
    return _finish(_finish((a + GOLDEN) & M64) ^ ((b * GOLDEN + 0x632BE59BD9B4E019) & M64))


def _finish_np(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix_np(a, ids):
    """mix(a, id) for an array of ids."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    return _finish_np(np.uint64(_finish((a + GOLDEN) & M64))
                      ^ (ids * np.uint64(GOLDEN) + np.uint64(0x632BE59BD9B4E019)))


class SplittableRandom:
    """java.util.SplittableRandom(seed), as far as nextInt() and nextInt(bound) go."""

    GAMMA = 0x9E3779B97F4A7C15

    def __init__(self, seed):
        self.seed = seed & M64

    @staticmethod
    def mix32(z):
        z = ((z ^ (z >> 33)) * 0x62A9D9ED799705F5) & M64
        r = (((z ^ (z >> 28)) * 0xCB24D0A5C88C35B3) & M64) >> 32
        return r - (1 << 32) if r >= (1 << 31) else r  # Java int

    def next_int(self, bound=None):
        self.seed = (self.seed + self.GAMMA) & M64
        r = self.mix32(self.seed)
        if bound is None:
            return r
        if bound <= 0:
            raise ValueError("bound must be positive")
        m = bound - 1
        if bound & m == 0:
            return r & m
        u = (r & 0xFFFFFFFF) >> 1
        while True:
            r = u % bound
            if _int32(u + m - r) >= 0:
                return r
            self.seed = (self.seed + self.GAMMA) & M64
            u = (self.mix32(self.seed) & 0xFFFFFFFF) >> 1


def _int32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v


def _parameters(text):
    t = text[len(PREFIX):] if text.startswith(PREFIX) else text
    kv = {}
    for part in t.split(","):
        if not part.strip():
            continue
        if part.find("=") < 1:
            raise ValueError("synthetic parameter '%s' is not key=value" % part)
        k, v = part.split("=", 1)
        kv[k.strip().lower()] = v.strip()
    for k in kv:
        if k not in ("samples", "shape", "dtype", "seed", "classes", "order"):
            raise ValueError("unknown synthetic parameter '%s': use samples, shape, dtype, seed, classes, order" % k)
    if kv.get("order", "seeded") not in ("seeded", "producer"):
        raise ValueError("synthetic order is seeded or producer, not '%s'" % kv["order"])
    return kv


def seeded_order(description):
    """Whether a source description's epochs are in SyntheticSpec.order (order=seeded, the default), rather than
    chosen by the producer at run time (order=producer: a Java SyntheticSource, which keeps exact epochs for
    consumers joining mid-epoch)."""
    return _parameters(description).get("order", "seeded") != "producer"


class SyntheticSpec:
    """``samples=S,shape=AxBxC,dtype=T,seed=K[,classes=C]``: see the Java class of the same name."""

    def __init__(self, samples, shape, dtype, seed, classes):
        if samples < 1:
            raise ValueError("synthetic samples must be at least 1, got %d" % samples)
        if classes < 1:
            raise ValueError("synthetic classes must be at least 1, got %d" % classes)
        self.samples = samples
        self.shape = tuple(shape)
        self.dtype = dtype  # canonical lower-case name
        self.seed = seed
        self.classes = classes
        self.numel = int(np.prod(self.shape, dtype=np.int64))
        code = _DTYPES[dtype]
        self.np_dtype = np.dtype("<u2") if code == "bf16" else np.dtype(code)
        self.sample_bytes = self.numel * self.np_dtype.itemsize

    @classmethod
    def parse(cls, text):
        kv = _parameters(text)
        if "samples" not in kv:
            raise ValueError("synthetic data needs samples=N")
        dtype = kv.get("dtype", "float32").lower()
        if dtype not in _DTYPES:
            raise ValueError("unknown dtype '%s'" % dtype)
        canonical = {"u1": "uint8", "i1": "int8", "<i2": "int16", "<i4": "int32", "<i8": "int64", "<f2": "float16",
                     "bf16": "bfloat16", "<f4": "float32", "<f8": "float64", "?": "bool"}[_DTYPES[dtype]]
        try:
            return cls(int(kv["samples"]), [int(d) for d in kv.get("shape", "3x32x32").split("x")], canonical,
                       int(kv.get("seed", "0")), int(kv.get("classes", "10")))
        except ValueError as e:
            raise ValueError("synthetic parameters '%s' hold a non-number: %s" % (text, e)) from None

    def label(self, sample_id):
        return mix((self.seed ^ 0x5DEECE66D) & M64, sample_id) % self.classes

    def labels(self, ids):
        return (_mix_np((self.seed ^ 0x5DEECE66D) & M64, ids) % np.uint64(self.classes)).astype(np.int64)

    def order(self, epoch):
        """The sample ids of epoch ``epoch`` in the order the producer emits them."""
        n = self.samples
        ids = list(range(n))
        r = SplittableRandom(mix(self.seed & M64, (epoch + GOLDEN) & M64))
        for i in range(n - 1, 0, -1):
            j = r.next_int(i + 1)
            ids[i], ids[j] = ids[j], ids[i]
        return np.array(ids, dtype=np.int64)

    def fill(self, ids):
        """The data of samples ``ids``: an array of shape (len(ids),) + shape, as the producer writes it."""
        ids = np.asarray(ids, dtype=np.int64)
        n = self.numel
        dt = self.dtype
        base = _mix_np(self.seed & M64, ids)
        if dt in ("uint8", "int8", "int16", "int32", "int64"):
            words = (self.sample_bytes + 7) // 8
            steps = np.arange(1, words + 1, dtype=np.uint64) * np.uint64(GOLDEN)
            raw = _finish_np(base[:, None] + steps[None, :]).astype("<u8")
            out = raw.view(np.uint8).reshape(len(ids), words * 8)[:, :self.sample_bytes]
            return np.ascontiguousarray(out).view(self.np_dtype).reshape((len(ids),) + self.shape)
        steps = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN)
        z = _finish_np(base[:, None] + steps[None, :])
        if dt == "float64":
            out = (z >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)
        elif dt == "bool":
            out = (z & np.uint64(1)).astype(np.bool_)
        else:
            unit = (z >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)
            if dt == "float32":
                out = unit
            elif dt == "float16":
                out = unit.astype(np.float16)
            else:  # bfloat16: the float32's top 16 bits, truncated
                out = (unit.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        return out.astype(self.np_dtype, copy=False).reshape((len(ids),) + self.shape)

    def format(self):
        return "%ssamples=%d,shape=%s,dtype=%s,seed=%d,classes=%d" % (
            PREFIX, self.samples, "x".join(str(d) for d in self.shape), self.dtype, self.seed, self.classes)


class Verifier:
    """Checks received batches against the generator and counts per epoch what arrived (the Java
    SyntheticVerifier's counts). Order: in a seeded-order stream every sample must be the one spec.order puts at
    its stream position; where the producer chooses the order, each batch of an epoch must start where the one
    before it ended."""

    def __init__(self, spec, seeded_order=True):
        self.spec = spec
        self.seeded_order = seeded_order
        self._order_epoch = -1
        self._order = None
        self._reset()

    def _reset(self):
        self.seen = np.zeros(self.spec.samples, dtype=bool)
        self._next_position = -1
        self.batches = self.samples = self.unique = self.duplicates = self.corrupt = self.out_of_order = 0

    def _expected_ids(self, pos, n):
        spe = self.spec.samples
        out = np.empty(n, dtype=np.int64)
        k = 0
        while k < n:
            epoch, offset = divmod(pos + k, spe)
            if epoch != self._order_epoch:
                self._order = self.spec.order(epoch)
                self._order_epoch = epoch
            take = min(n - k, spe - offset)
            out[k:k + take] = self._order[offset:offset + take]
            k += take
        return out

    def accept(self, data, label, ids, stream_position):
        spec = self.spec
        n = len(ids)
        self.batches += 1
        self.samples += n
        ids = np.asarray(ids, dtype=np.int64)
        valid = (ids >= 0) & (ids < spec.samples)
        self.corrupt += int(n - valid.sum())
        if isinstance(stream_position, int):
            positions = None  # consecutive from there
        else:  # a rank of a job: each sample's own position
            positions = [int(p) for p in stream_position]
        if self.seeded_order:
            if positions is None:
                expected = self._expected_ids(stream_position, n)
            else:
                expected = np.array([self._expected_ids(p, 1)[0] for p in positions], dtype=np.int64)
            self.out_of_order += int(((ids != expected) & valid).sum())
        elif positions is None and 0 <= self._next_position != stream_position:
            self.out_of_order += int(valid.sum())
        elif positions is not None and any(p < q for p, q in zip(positions, [self._next_position] + positions)):
            self.out_of_order += int(valid.sum())  # a rank's positions rise through the epoch
        self._next_position = stream_position + n if positions is None else (positions[-1] + 1 if positions else
                                                                             self._next_position)
        good = ids[valid]
        for i in good:  # duplicates inside one batch count too
            if self.seen[i]:
                self.duplicates += 1
            else:
                self.seen[i] = True
                self.unique += 1
        if len(good):
            want = spec.fill(good).reshape(len(good), -1).view(np.uint8)
            got = np.ascontiguousarray(np.asarray(data)[valid]).reshape(len(good), -1).view(np.uint8)
            bad = np.any(want != got, axis=1) | (np.asarray(label)[valid] != spec.labels(good))
            self.corrupt += int(bad.sum())

    def finish_epoch(self):
        c = dict(batches=self.batches, samples=self.samples, unique=self.unique, duplicates=self.duplicates,
                 corrupt=self.corrupt, out_of_order=self.out_of_order)
        self._reset()
        return c
