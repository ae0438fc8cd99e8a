"""The tensor element types TensorSocket carries, by wire code: the one table the client reads them from
(docs/PROTOCOL.md, section 3, the same codes as the Java library's DType)."""

import numpy as np

# wire code -> (name, numpy dtype). bfloat16 has no numpy type: its raw bits come as uint16 and
# Batch.torch() reinterprets them as torch.bfloat16.
DTYPES = {
    1: ("uint8", np.dtype("u1")),
    2: ("int8", np.dtype("i1")),
    3: ("int16", np.dtype("<i2")),
    4: ("int32", np.dtype("<i4")),
    5: ("int64", np.dtype("<i8")),
    6: ("float16", np.dtype("<f2")),
    7: ("bfloat16", np.dtype("<u2")),
    8: ("float32", np.dtype("<f4")),
    9: ("float64", np.dtype("<f8")),
    10: ("bool", np.dtype("?")),
}
BFLOAT16 = 7

# name -> numpy dtype, as Flight columns name their types.
BY_NAME = {name: dt for name, dt in DTYPES.values()}

# little-endian numpy dtype string -> wire code; uint16 arrays are not bfloat16 (that comes only from torch).
_CODES = {dt.str: code for code, (_, dt) in DTYPES.items() if code != BFLOAT16}


def code_of(dtype) -> int:
    """The wire code of numpy ``dtype`` (either byte order), or None if TensorSocket cannot carry it."""
    dt = np.dtype(dtype)
    key = dt.newbyteorder("<").str if dt.byteorder == ">" else dt.str
    return _CODES.get(key)
