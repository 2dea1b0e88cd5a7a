"""Reading a ``.safetensors`` file into numpy arrays, without the `safetensors` package or torch.

The format (github.com/huggingface/safetensors, README "Format"): 8 bytes, a little-endian
unsigned 64-bit integer N; N bytes of UTF-8 JSON, an object naming each tensor with its ``dtype``,
``shape`` and ``data_offsets`` ``[begin, end)`` (bytes, counted from the end of the header), and
optionally ``__metadata__`` (strings); then the tensors' bytes, little-endian, row-major, one after
the other with no gap. A file that does not keep to that (a header beyond the file, a tensor whose
bytes are not its shape's, gaps or overlaps) is refused with the reason, never read half.

The local embedding model (engine/backends/local_embeddings.py) reads its weights with it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from psyq.engine.files.errors import BackendError

# The format's dtype names and their numpy types (little-endian). BF16 has none: it is widened to
# float32 (its 16 bits are a float32's upper half).
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}
MAX_HEADER = 100_000_000   # the format's own bound on the header (bytes)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the safetensors file at `path`, by name (read-only arrays over the file's
    bytes; BF16 widened to float32).

    Example:
        >>> import tempfile, struct
        >>> header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
        >>> path = Path(tempfile.mkdtemp()) / "tiny.safetensors"
        >>> _ = path.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<2f", 0.5, -2.0))
        >>> read_safetensors(path)["w"].tolist()
        [0.5, -2.0]
    """
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) < 8:
        raise BackendError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    size = int(data[:8].view("<u8")[0])
    if size > MAX_HEADER or 8 + size > len(data):
        raise BackendError(f"{path}: not a safetensors file (a header of {size:,} bytes in a file of {len(data):,})")
    try:
        header = json.loads(bytes(data[8:8 + size]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackendError(f"{path}: the safetensors header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise BackendError(f"{path}: the safetensors header is not a JSON object")
    body = data[8 + size:]
    tensors: dict[str, np.ndarray] = {}
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(path, name, entry, body)
        spans.append(tuple(entry["data_offsets"]))
    end = 0
    for begin, stop in sorted(spans):   # the tensors fill the body: no gap, no overlap
        if begin != end:
            raise BackendError(f"{path}: the tensors' bytes leave a gap or overlap at byte {begin:,} of the data")
        end = stop
    if end != len(body):
        raise BackendError(f"{path}: {len(body) - end:,} bytes after the last tensor")
    return tensors


def _tensor(path: Path, name: str, entry: object, body: np.ndarray) -> np.ndarray:
    """One tensor of the header read over the body's bytes, checked against its shape."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise BackendError(f"{path}: tensor '{name}' is not described by dtype, shape and data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPES and dtype != "BF16":
        raise BackendError(f"{path}: tensor '{name}' has dtype {dtype!r}, which psyq does not read")
    if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
            and isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in offsets)):
        raise BackendError(f"{path}: tensor '{name}' has a shape or offsets that are not whole numbers")
    begin, end = offsets
    width = 2 if dtype == "BF16" else np.dtype(DTYPES[dtype]).itemsize
    if not 0 <= begin <= end <= len(body) or end - begin != math.prod(shape) * width:
        raise BackendError(f"{path}: tensor '{name}' ({dtype} {shape}) does not fit its bytes [{begin:,}, {end:,})")
    raw = body[begin:end]
    if dtype == "BF16":
        return (raw.view("<u2").astype("<u4") << 16).view("<f4").reshape(shape)
    return raw.view(DTYPES[dtype]).reshape(shape)
