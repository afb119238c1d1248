"""A reader of the safetensors format (no pickle, nothing executed).

Layout (huggingface/safetensors, "Format"): 8 bytes, the header length ``n`` as a
little-endian unsigned 64-bit integer; ``n`` bytes of UTF-8 JSON, an object mapping each
tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to
the end of the header), plus an optional ``"__metadata__"`` object of strings; then the
data, little-endian, row-major.

Checked before any tensor is used, each failure a :class:`MiniRagError` naming the file:
the header length fits the file (and 100 MB); the header is a JSON object; every entry
has a known dtype, a shape of non-negative integers and offsets with
``end - begin == product(shape) * itemsize``; the tensors tile the data area exactly
(sorted by offset, no gap, no overlap, nothing left over).  Only the header is parsed
here (``read_header``); ``load`` turns the data into numpy arrays with ``numpy.frombuffer``
(numpy is imported there, lazily).
"""
from __future__ import annotations

import json
import struct
from typing import Any, Dict, Tuple

from ..errors import MiniRagError

MAX_HEADER = 100 * 1024 * 1024
#: dtype name -> (numpy dtype string, item size in bytes)
DTYPES = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "I64": ("<i8", 8),
          "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1), "U8": ("u1", 1),
          "BOOL": ("?", 1)}

Header = Dict[str, Tuple[str, Tuple[int, ...], int, int]]


def read_header(data: bytes, origin: str) -> Tuple[Header, int]:
    """``({name: (dtype, shape, begin, end)}, data start)`` of a safetensors file's bytes."""
    if len(data) < 8:
        raise MiniRagError("%s: not a safetensors file (%d bytes)" % (origin, len(data)))
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER or 8 + n > len(data):
        raise MiniRagError("%s: safetensors header length %d does not fit the file (%d bytes)"
                           % (origin, n, len(data)))
    try:
        raw = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MiniRagError("%s: safetensors header is not UTF-8 JSON" % origin) from None
    if not isinstance(raw, dict):
        raise MiniRagError("%s: safetensors header must be a JSON object" % origin)
    start = 8 + n
    size = len(data) - start
    header: Header = {}
    for name in sorted(raw):
        entry = raw[name]
        if name == "__metadata__":
            continue
        where = "%s: tensor %r" % (origin, name)
        if not isinstance(entry, dict):
            raise MiniRagError("%s: entry must be an object" % where)
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype not in DTYPES:
            raise MiniRagError("%s: unknown dtype %r" % (where, dtype))
        if (not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise MiniRagError("%s: shape must be a list of non-negative integers, got %r" % (where, shape))
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= size):
            raise MiniRagError("%s: data_offsets must be [begin, end] within the %d data bytes, got %r"
                               % (where, size, offsets))
        count = 1
        for d in shape:
            count *= d
        if offsets[1] - offsets[0] != count * DTYPES[dtype][1]:
            raise MiniRagError("%s: %d bytes for shape %r of %s (expected %d)"
                               % (where, offsets[1] - offsets[0], shape, dtype, count * DTYPES[dtype][1]))
        header[name] = (dtype, tuple(shape), offsets[0], offsets[1])
    pos = 0
    for name, (_, _, begin, end) in sorted(header.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if begin != pos:
            raise MiniRagError("%s: tensor %r starts at byte %d of the data, expected %d (gap or overlap)"
                               % (origin, name, begin, pos))
        pos = end
    if pos != size:
        raise MiniRagError("%s: %d data bytes after the last tensor" % (origin, size - pos))
    return header, start


def load(data: bytes, origin: str) -> Dict[str, Any]:
    """``{name: numpy array}`` of a safetensors file's bytes (arrays are read-only views)."""
    import numpy as np
    header, start = read_header(data, origin)
    out = {}
    for name, (dtype, shape, begin, end) in header.items():
        dt = np.dtype(DTYPES[dtype][0])
        if end == begin:
            out[name] = np.zeros(shape, dtype=dt)
            continue
        arr = np.frombuffer(data, dtype=dt, count=(end - begin) // dt.itemsize, offset=start + begin)
        out[name] = arr.reshape(shape)
    return out


__all__ = ["read_header", "load", "DTYPES"]
