"""Decoded samples of any size in rows of one width: what a producer started for trials that augment the samples
themselves (``share(..., augment=SampleAugment(T))``) serves, and how a trial turns a row back into the sample.

The feeder loads each sample of the factory's data set with the data set's transform off (``_decoded_cache.loads``):
torchvision's ``ImageFolder`` gives the PIL image at the file's own size, and each trial applies its own ``T`` to it.
A producer's batches hold one shape per sample, and images differ in size, so each sample's first field (the image)
goes into a row of ``width`` bytes with its kind and shape beside it::

    field "decoded"        uint8 (n, width)   row i: sample i's bytes (PIL: Image.tobytes(); tensor or array: C order),
                                              zero after them
    field "decoded.shape"  int32 (n, 5)       row i: [kind, code, d0, d1, d2]
                                                kind 1, PIL image: code = MODES index, d0 height, d1 width, d2 bands
                                                kind 2, torch tensor / kind 3, numpy array: code = DTYPES index,
                                                d0..d2 the shape (-1 past its last dimension; at most 3)
    fields "1", "2", ...   the sample's other fields (a label, an index), collated by torch's default_collate
    field "ids"            int64 (n,)         each sample's index in the data set: the seed of its augmentation

A row's width is fixed when the feed starts (:func:`row_width`): from the image files' headers where the data set
lists its files (``ImageFolder``'s ``samples``), else from the first samples with room to spare, or as given
(``decoded_bytes``). A sample larger than its row is refused by the collation, naming the option to raise it.
"""

import re
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

DECODED = "decoded"
SHAPE = "decoded.shape"
IDS = "ids"

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "YCbCr", "I", "F", "I;16")
"""PIL modes a row carries (their bytes are the pixels): index = the code in ``decoded.shape``."""
DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool")
"""Element types of a tensor or array a row carries: index = the code in ``decoded.shape``."""

_PIL, _TENSOR, _ARRAY = 1, 2, 3
_ALIGN = 64
HEADROOM = 1.5
"""Room a row leaves over the largest of the first samples, where no file lists the data set's images."""
SCAN_SECONDS = 5.0
"""The most time spent reading image headers to size the rows; past it the largest seen so far, with headroom."""


_MARK = re.compile(r" \[decoded for augment=, workers=(\d+)\]$")


def marked(description: str, workers: int) -> str:
    """A producer's source description in this mode: ``description`` and the loader's worker count, the number of
    augmentation workers a trial runs by default (as many as its private DataLoader would)."""
    return "%s [decoded for augment=, workers=%d]" % (description, workers)


def unmarked(description: str) -> Tuple[str, Optional[int]]:
    """``(description, workers)`` of a description :func:`marked`, ``(description, None)`` of any other."""
    m = _MARK.search(description)
    return (description, None) if m is None else (description[:m.start()], int(m.group(1)))


def is_decoded(tensor_names: Sequence[str]) -> bool:
    """Whether a producer's tensors are this layout's (a producer started for trials that augment)."""
    return DECODED in tensor_names and SHAPE in tensor_names and IDS in tensor_names


def sample_fields(tensor_names: Sequence[str]) -> List[str]:
    """The tensors a trial's batches are made of, in the sample's order: the image first, then "1", "2", ..."""
    rest = sorted((n for n in tensor_names if n.isdigit()), key=int)
    return [DECODED] + rest


def _head(x: Any) -> Tuple[List[int], memoryview]:
    """``x``'s ``[kind, code, d0, d1, d2]`` and its bytes; ValueError for what a row cannot carry."""
    mode = getattr(x, "mode", None)
    if mode is not None and hasattr(x, "tobytes") and hasattr(x, "size"):
        if mode not in MODES:
            raise ValueError("a decoded image of PIL mode %r cannot be shared for augmentation (modes %s are): convert "
                             "it in the data set's loader (ImageFolder converts to RGB)" % (mode, ", ".join(MODES)))
        w, h = x.size
        data = x.tobytes()
        return [_PIL, MODES.index(mode), h, w, len(x.getbands())], memoryview(data)
    kind = _ARRAY if isinstance(x, np.ndarray) else _TENSOR
    a = x if kind == _ARRAY else _tensor_array(x)
    name = str(a.dtype)
    if name not in DTYPES or a.ndim > 3:
        raise ValueError("a decoded sample of %s %s cannot be shared for augmentation: a row carries PIL images and "
                         "tensors of at most 3 dimensions of %s" % (name, tuple(a.shape), ", ".join(DTYPES)))
    a = np.ascontiguousarray(a)
    dims = list(a.shape) + [-1] * (3 - a.ndim)
    return [kind, DTYPES.index(name)] + dims, memoryview(a.reshape(-1).view(np.uint8).data)


def _tensor_array(x: Any) -> np.ndarray:
    if not (hasattr(x, "detach") and hasattr(x, "numpy")):
        raise ValueError("a decoded sample of type %s cannot be shared for augmentation: the first field of a sample "
                         "must be a PIL image, a torch tensor or a numpy array" % type(x).__name__)
    return x.detach().cpu().numpy()


class Packed(NamedTuple):
    """A sample's first field as its row will hold it: ``[kind, code, d0, d1, d2]`` and its bytes (what a decoded-sample
    cache keeps in this mode: read back, it is copied into the row as it is, nothing converted or unpickled)."""

    head: List[int]
    data: np.ndarray


def pack(x: Any) -> Packed:
    """``x`` (a decoded sample's first field) as a row will hold it."""
    head, data = _head(x)
    return Packed(head, np.frombuffer(data, dtype=np.uint8))


class PackedLoad:
    """``load(i)`` with the sample's first field packed (:func:`pack`): what the feeder loads, and caches, in this
    mode."""

    def __init__(self, load: Callable[[int], Any]):
        self._load = load

    def __call__(self, i: int) -> Tuple[Any, ...]:
        item = self._load(i)
        if isinstance(item, dict):
            raise ValueError("augment= shares samples that are an image or a tuple with the image first; this data set "
                             "gives dicts (%s)" % ", ".join(map(str, item)))
        fields = tuple(item) if isinstance(item, (tuple, list)) else (item,)
        return (pack(fields[0]),) + fields[1:]


def nbytes(x: Any) -> int:
    """The bytes ``x`` (a decoded sample's first field) takes in a row."""
    return _head(x)[1].nbytes


def unpack(row: np.ndarray, head: Sequence[int]) -> Any:
    """The sample a row holds: a PIL image, a torch tensor or a numpy array of its own (a copy of the row's bytes)."""
    kind, code = int(head[0]), int(head[1])
    if kind == _PIL:
        from PIL import Image
        h, w = int(head[2]), int(head[3])
        mode = MODES[code]
        size = h * w * _bytes_per_pixel(mode, int(head[4]))
        pixels = row[:size].view()
        pixels.flags.writeable = False  # PIL reads a read-only buffer without a copy of its own first
        return Image.frombytes(mode, (w, h), pixels)
    shape = tuple(int(d) for d in head[2:] if d >= 0)
    dtype = np.dtype(DTYPES[code])
    a = row[:int(np.prod(shape, dtype=np.int64)) * dtype.itemsize].view(dtype).reshape(shape).copy()
    if kind == _ARRAY:
        return a
    import torch
    return torch.from_numpy(a)


def _bytes_per_pixel(mode: str, bands: int) -> int:
    return {"I": 4, "F": 4, "I;16": 2}.get(mode, bands)


class RowRing:
    """Where the feeder's loader workers put a batch's rows for the feeder to copy into the arena: ``slots`` buffers of
    ``batch_size`` rows of ``width`` bytes in memory files made, and touched, once before the workers fork, and a queue
    of the free ones. A worker takes a free buffer for each batch it collates and sends back only its number
    (:class:`RingRows`); the feeder gives it back once the rows are in the arena. Without it each batch's rows went to
    the feeder through shared memory of their own, made, faulted in and copied once per batch. ``slots`` covers the
    batches the loader has outstanding and the one the feeder holds: a worker never waits for one but while the feeder
    does, for the producer."""

    def __init__(self, slots: int, batch_size: int, width: int):
        import multiprocessing

        import torch

        from ._output_ring import OutputRing
        self.ring = OutputRing(slots, (int(batch_size), int(width)), torch.uint8)
        self.slots = int(slots)
        self._free = multiprocessing.get_context("fork").Queue()
        for i in range(slots):
            self._free.put(i)

    def take(self) -> int:
        """A free buffer's number (a worker's, or the feeder's own where it loads in its own process)."""
        import queue
        try:
            return self._free.get(timeout=TAKE_TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError("no buffer for a batch's rows came free in %d s: the feeder holds them all (it waits for "
                               "its producer, or stopped)" % TAKE_TIMEOUT_S) from None

    def reset(self, held: Sequence[int] = ()) -> None:
        """After the workers were ended mid-epoch (whatever buffers they had taken are theirs no more): every buffer
        but ``held`` (the feeder's) is free."""
        import queue
        while True:
            try:
                self._free.get_nowait()
            except queue.Empty:
                break
        for i in range(self.slots):
            if i not in held:
                self._free.put(i)

    def rows(self, slot: int) -> np.ndarray:
        """Buffer ``slot``'s rows, in place."""
        return self.ring.batch(slot).numpy()

    def give(self, slot: int) -> None:
        """Buffer ``slot`` is free again (its rows are in the arena)."""
        self._free.put(slot)

    def close(self) -> None:
        self.ring.close()


TAKE_TIMEOUT_S = 600
"""The longest a worker waits for a free row buffer: the feeder gives one back with each batch it publishes, however
long its consumers take, so only a feeder that stopped runs into it."""


class RingRows(NamedTuple):
    """A batch's rows as a worker sends them: the number of the :class:`RowRing` buffer holding them."""

    slot: int


class DecodedCollate:
    """The feeder's collate function in this mode: samples ``(image, *others, id)`` (``DecodedSamples``' items) into
    the layout's fields, each image in a row of ``width`` bytes: in a buffer of ``ring`` (sent back as its
    :class:`RingRows`), or in a tensor of its own."""

    def __init__(self, width: int, ring: Optional[RowRing] = None):
        self.width = int(width)
        self.ring = ring

    def plain(self) -> "DecodedCollate":
        """The same collation without the ring: for a loader of its own (a lane's), whose batches the ring's
        accounting does not cover."""
        return DecodedCollate(self.width)

    def __call__(self, samples: Sequence[Tuple[Any, ...]]):
        import torch
        from torch.utils.data import default_collate
        n = len(samples)
        slot = self.ring.take() if self.ring is not None else -1
        if slot >= 0:
            out = self.rows_of(slot)[:n]
        else:
            rows = torch.empty((n, self.width), dtype=torch.uint8)
            out = rows.numpy()
        heads = torch.empty((n, 5), dtype=torch.int32)
        for k, s in enumerate(samples):
            packed = s[0] if isinstance(s[0], Packed) else pack(s[0])
            head, data = packed.head, packed.data
            size = data.nbytes
            if size > self.width:
                raise ValueError("sample %d decodes to %s of %d bytes, more than the %d bytes a decoded sample may take "
                                 "in this producer (sized from its first samples); start it with a larger "
                                 "decoded_bytes (share(..., producer_options={'decoded_bytes': %d}))"
                                 % (s[-1], describe(head), size, self.width, _aligned(size * HEADROOM)))
            out[k, :size] = data
            out[k, size:] = 0
            heads[k] = torch.tensor(head, dtype=torch.int32)
        fields: Dict[str, Any] = {DECODED: RingRows(slot) if slot >= 0 else rows, SHAPE: heads}
        for f in range(1, len(samples[0]) - 1):
            fields[str(f)] = default_collate([s[f] for s in samples])
        fields[IDS] = torch.tensor([s[-1] for s in samples], dtype=torch.int64)
        return fields

    def rows_of(self, slot: int) -> np.ndarray:
        assert self.ring is not None
        return self.ring.rows(slot)


def in_place(batch: Any, ring: Optional[RowRing]) -> Tuple[Any, int]:
    """``(batch, slot)``: a collated batch with its rows as an array viewing its ring buffer, and that buffer's number
    (to give back once copied), or ``(batch, -1)`` for one whose rows travelled as a tensor."""
    if ring is None or not isinstance(batch, dict) or not isinstance(batch.get(DECODED), RingRows):
        return batch, -1
    slot = batch[DECODED].slot
    n = len(batch[IDS])
    return dict(batch, **{DECODED: ring.rows(slot)[:n]}), slot


def describe(head: Sequence[int]) -> str:
    """A row's sample in words: 'a 500x375 RGB image', 'a uint8 tensor of shape (3, 32, 32)'."""
    kind, code = int(head[0]), int(head[1])
    if kind == _PIL:
        return "a %dx%d %s image" % (head[3], head[2], MODES[code])
    shape = tuple(int(d) for d in head[2:] if d >= 0)
    return "a %s %s of shape %s" % (DTYPES[code], "tensor" if kind == _TENSOR else "array", shape)


class DecodedSamples:
    """A data set's samples as loaded (``PackedLoad``, or a cache of it), each a tuple ending in its index: what the
    feeder's DataLoader loads in this mode (collated by :class:`DecodedCollate`)."""

    def __init__(self, load: Callable[[int], Tuple[Any, ...]], size: int):
        self._load = load
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> Tuple[Any, ...]:
        return tuple(self._load(i)) + (i,)


def row_width(dataset: Any, first: Sequence[Any], given: Optional[int] = None) -> int:
    """The bytes each row holds: ``given``; else the largest image among the data set's files (read from their
    headers, where the data set lists them) in the first sample's bands; else the largest of ``first`` (decoded
    samples' first fields) with :data:`HEADROOM`."""
    if given is not None:
        if int(given) < 1:
            raise ValueError("decoded_bytes is the bytes one decoded sample may take, at least 1, not %r" % (given,))
        return _aligned(int(given))
    largest = max(nbytes(x) for x in first)
    bands = _pil_bands(first[0])
    files = _files_of(dataset)
    if bands and files:
        scanned = _largest_image(files, SCAN_SECONDS)
        if scanned is not None:
            pixels, complete = scanned
            return _aligned(max(largest, pixels * bands * (1 if complete else HEADROOM)))
    return _aligned(largest * HEADROOM)


def _aligned(n: float) -> int:
    return (int(n) + _ALIGN - 1) // _ALIGN * _ALIGN


def _pil_bands(x: Any) -> int:
    mode = getattr(x, "mode", None)
    return _bytes_per_pixel(mode, len(x.getbands())) if mode in MODES else 0


def lists_files(dataset: Any) -> bool:
    """Whether the data set lists its image files, whose headers size the rows."""
    return _files_of(dataset) is not None


def _files_of(dataset: Any) -> Optional[List[str]]:
    """The image files of a data set that lists them (torchvision's DatasetFolder: ``samples`` of (path, class)),
    through wrappers that keep the inner one as ``dataset`` (Indexed, Subset)."""
    for _ in range(8):
        samples = getattr(dataset, "samples", None)
        if isinstance(samples, list) and samples and isinstance(samples[0], tuple) and isinstance(samples[0][0], str):
            return [s[0] for s in samples]
        dataset = getattr(dataset, "dataset", None)
        if dataset is None:
            return None
    return None


def _largest_image(files: Sequence[str], seconds: float) -> Optional[Tuple[int, bool]]:
    """(the most pixels of one image among ``files``, whether all were read) from their headers, for up to
    ``seconds``; None where PIL is missing or no header could be read."""
    import time
    try:
        from PIL import Image
    except ImportError:
        return None
    deadline = time.monotonic() + seconds
    most, read = 0, 0
    for path in files:
        try:
            with Image.open(path) as im:
                w, h = im.size
        except (OSError, ValueError):
            continue
        most, read = max(most, w * h), read + 1
        if time.monotonic() > deadline:
            return (most, False) if read else None
    return (most, True) if read else None
