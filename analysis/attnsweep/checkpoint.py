"""Reading a checkpoint for `attnsweep import-weights` (import_weights.py): bounded JSON
(headers and configs), the safetensors header and its tensors with numpy only (no deep-learning
framework, never a pickle), single files or sharded ones behind an index. Exit codes of the
command: BadInput is 2, IOFailure 3."""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

PROG = "attnsweep import-weights"
MAX_HEADER = 100 << 20  # bytes of JSON header accepted (real headers are a few MB at most)
MAX_JSON_DEPTH = 32     # nesting of any JSON read (a safetensors header needs 3, a config 4)
MAX_DIM = 1 << 20       # largest d or head width accepted (the matrix file's own bound)
MAX_LAYERS = 1 << 16    # stored layers accepted
# Largest weight magnitude accepted: trained weights are O(1); a product of two weights summed
# over d_k <= 2^20 terms then stays below 1e66, and M's quadratic forms far from overflow.
WMAX = 1e30


class BadInput(Exception):
    """Bad input: exit 2 with the message."""


class IOFailure(Exception):
    """An I/O failure on valid input: exit 3 with the message."""


# ---------------------------------------------------------------- JSON with bounds

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(raw: bytes) -> int:
    """Largest nesting of arrays and objects in the JSON text raw (bytes), strings skipped."""
    body = _STRING.sub(b"", raw)
    if not body:
        return 0
    a = np.frombuffer(body, dtype=np.uint8)
    step = (np.isin(a, (ord("{"), ord("["))).astype(np.int64)
            - np.isin(a, (ord("}"), ord("]"))).astype(np.int64))
    return int(np.cumsum(step).max(initial=0))


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out = {}
    for k, v in pairs:
        if k in out:
            raise BadInput("the key %r appears twice" % k)
        out[k] = v
    return out


def load_json(raw: bytes, where: str) -> Any:
    """raw (bytes) as JSON: depth bounded, duplicate keys refused, messages naming where."""
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise BadInput("%s: JSON nested %d deep (more than %d): not a checkpoint's JSON"
                       % (where, depth, MAX_JSON_DEPTH))
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except BadInput as e:
        raise BadInput("%s: %s" % (where, e))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BadInput("%s: not valid JSON (%s)" % (where, e))


def regular(path: str) -> None:
    """Refuse a FIFO, device or directory by type before opening it: open() blocks on a FIFO
    (issue 49)."""
    if os.path.exists(path) and not os.path.isfile(path):
        raise BadInput("%s is not a regular file: refusing to open it" % path)


def read_json_file(path: str, what: str) -> Any:
    regular(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_HEADER + 1)
    except OSError as e:
        raise IOFailure("%s: cannot read %s: %s" % (path, what, e.strerror or e))
    if len(raw) > MAX_HEADER:
        raise BadInput("%s: %s larger than %d bytes" % (path, what, MAX_HEADER))
    return load_json(raw, path)


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# ---------------------------------------------------------------- safetensors

# Item sizes of the safetensors dtypes (for the byte-range checks), and the numpy little-endian
# types of those that can be read as weights (BF16 is converted by hand).
ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
            "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOATS = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}

PICKLE_HINT = ("import-weights reads safetensors only and never unpickles a file (unpickling "
               "runs code). Convert once where PyTorch is installed: python3 -c \"import torch; "
               "from safetensors.torch import save_file; sd = torch.load('pytorch_model.bin', "
               "map_location='cpu', weights_only=True); save_file({k: v.contiguous() for k, v "
               "in sd.items()}, 'model.safetensors')\" (or download the repository's "
               "model.safetensors)")


def sniff_foreign(path: str, head: bytes) -> Optional[str]:
    """A message for a file that is a known non-safetensors checkpoint, else None."""
    if head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05"):
        return "%s: a pickle file (a PyTorch checkpoint such as pytorch_model.bin). %s" % (
            path, PICKLE_HINT)
    if head[:4] == b"PK\x03\x04":
        return ("%s: a zip archive (torch.save's format of pytorch_model.bin / *.pt). %s"
                % (path, PICKLE_HINT))
    if head[:8] == b"\x89HDF\r\n\x1a\n":
        return ("%s: an HDF5 file (a TensorFlow/Keras checkpoint, or already a matrix file): "
                "import-weights reads safetensors checkpoints" % path)
    return None


def read_header(path: str) -> Dict[str, "Entry"]:
    """The tensors of one safetensors file: {name: Entry}; every range is checked."""
    regular(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            foreign = sniff_foreign(path, head)
            if foreign:
                raise BadInput(foreign)
            if len(head) < 8:
                raise BadInput("%s: not a safetensors file (shorter than its 8-byte header length)"
                               % path)
            n = int.from_bytes(head, "little")
            if n > MAX_HEADER or n > size - 8:
                raise BadInput("%s: not a safetensors file (header length %d, file size %d)"
                               % (path, n, size))
            raw = f.read(n)
    except OSError as e:
        if not os.path.exists(path):
            raise BadInput("%s: no such checkpoint file" % path)
        raise IOFailure("%s: cannot read: %s" % (path, e.strerror or e))
    header = load_json(raw, "%s: the safetensors header" % path)
    if not isinstance(header, dict):
        raise BadInput("%s: the safetensors header is not a JSON object" % path)
    base, data = 8 + n, size - 8 - n
    out, ranges = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        ok = (isinstance(info, dict) and isinstance(info.get("dtype"), str)
              and isinstance(info.get("shape"), list) and len(info["shape"]) <= 8
              and all(is_int(s) and 0 <= s < 1 << 40 for s in info["shape"])
              and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2
              and all(is_int(o) for o in info["data_offsets"]))
        if not ok:
            raise BadInput("%s: tensor %s: header entry lacks dtype, shape (at most 8 sizes "
                           "below 2^40) or data_offsets" % (path, name))
        lo, hi = info["data_offsets"]
        if not 0 <= lo <= hi <= data:
            raise BadInput("%s: tensor %s: data_offsets [%d, %d] outside the %d data bytes"
                           % (path, name, lo, hi, data))
        item = ITEMSIZE.get(info["dtype"])
        if item is not None and hi - lo != item * math.prod(info["shape"]):
            raise BadInput("%s: tensor %s: %d bytes for %s of shape %s" % (
                path, name, hi - lo, info["dtype"], info["shape"]))
        if hi > lo:
            ranges.append((lo, hi, name))
        out[name] = Entry(path, name, info["dtype"], info["shape"], base + lo, base + hi)
    ranges.sort()
    for (lo0, hi0, n0), (lo1, hi1, n1) in zip(ranges, ranges[1:]):
        if lo1 < hi0:
            raise BadInput("%s: tensors %s [%d, %d] and %s [%d, %d] overlap in the data"
                           % (path, n0, lo0, hi0, n1, lo1, hi1))
    return out


class Entry:
    """One tensor of a safetensors file: where its bytes are and how to read them."""

    def __init__(self, path: str, name: str, dtype: str, shape: Tuple[int, ...], start: int,
                  end: int) -> None:
        self.path, self.name, self.dtype, self.shape = path, name, dtype, tuple(shape)
        self.start, self.end = start, end  # absolute byte offsets in the file


class Checkpoint:
    """The tensors of a checkpoint: one safetensors file, or the shards of an index."""

    def __init__(self, arg: str) -> None:
        self.arg = arg
        self.entries: Dict[str, Entry] = {}
        self.files: List[str] = []
        if os.path.isdir(arg):
            single = os.path.join(arg, "model.safetensors")
            index = os.path.join(arg, "model.safetensors.index.json")
            if os.path.exists(single):
                files = [single]
            elif os.path.exists(index):
                files = self._shards(index)
            else:
                pickles = [f for f in ("pytorch_model.bin", "pytorch_model.bin.index.json",
                                       "model.pt", "tf_model.h5") if
                           os.path.exists(os.path.join(arg, f))]
                if pickles:
                    raise BadInput("%s: holds %s but no model.safetensors. %s"
                                   % (arg, pickles[0], PICKLE_HINT))
                raise BadInput("%s: a directory without model.safetensors or "
                               "model.safetensors.index.json" % arg)
            self.dir = arg
        elif arg.endswith(".json"):
            files, self.dir = self._shards(arg), os.path.dirname(arg) or "."
        else:
            if not os.path.exists(arg):
                raise BadInput("%s: no such checkpoint file" % arg)
            files, self.dir = [arg], os.path.dirname(arg) or "."
        for path in files:
            self.files.append(path)
            for name, e in read_header(path).items():
                if name in self.entries:
                    raise BadInput("%s: tensor %s is also in %s" % (path, name,
                                                                    self.entries[name].path))
                self.entries[name] = e
        for name, shard in getattr(self, "weight_map", {}).items():
            put = self.entries.get(name)
            if put is not None and os.path.basename(put.path) != os.path.basename(shard):
                raise BadInput("%s: the index puts tensor %s in %s, but it is in %s"
                               % (self.index, name, shard, put.path))

    def _shards(self, index: str) -> List[str]:
        if not os.path.exists(index):
            raise BadInput("%s: no such index file" % index)
        self.files.append(index)
        doc = read_json_file(index, "the index")
        wm = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(wm, dict) or not wm or not all(isinstance(v, str)
                                                        for v in wm.values()):
            raise BadInput("%s: not a safetensors index (no weight_map of tensor -> file)"
                           % index)
        base = os.path.dirname(index) or "."
        for s in set(wm.values()):
            if os.path.isabs(s) or os.sep in s or s in (".", "..") or "\0" in s:
                raise BadInput("%s: shard %r is not a file name beside the index" % (index, s))
            if not os.path.exists(os.path.join(base, s)):
                raise BadInput("%s: shard %s (named in the weight_map) is missing" % (index, s))
        self.index, self.weight_map = index, wm
        return [os.path.join(base, s) for s in sorted(set(wm.values()))]

    def names(self) -> List[str]:
        return list(self.entries.keys())

    def shape(self, name: str) -> Tuple[int, ...]:
        return self.entries[name].shape

    def read(self, name: str) -> np.ndarray:
        """Tensor `name` as float64 (C order, the header's shape)."""
        e = self.entries[name]
        if e.dtype not in FLOATS:
            raise BadInput("%s: tensor %s has dtype %s; weights must be F64, F32, F16 or BF16"
                           % (e.path, name, e.dtype))
        try:
            with open(e.path, "rb") as f:
                f.seek(e.start)
                raw = f.read(e.end - e.start)
        except OSError as err:
            raise IOFailure("%s: cannot read tensor %s: %s" % (e.path, name, err.strerror or err))
        if len(raw) != e.end - e.start:
            raise BadInput("%s: tensor %s: the file ends inside its data" % (e.path, name))
        a = np.frombuffer(raw, dtype=FLOATS[e.dtype])
        if e.dtype == "BF16":  # the upper half of a float32
            a = (a.astype(np.uint32) << 16).view(np.float32)
        a = a.astype(np.float64).reshape(e.shape)
        bad = ~(np.abs(a) <= WMAX)  # NaN compares false
        if bad.any():
            i = tuple(int(x) for x in np.argwhere(bad)[0])
            what = "not finite" if not np.isfinite(a[i]) else "%g, beyond %g in magnitude" % (
                a[i], WMAX)
            raise BadInput("%s: tensor %s: entry %s is %s" % (e.path, name, i, what))
        return a

    def dtype(self, name: str) -> str:
        return self.entries[name].dtype


# ---------------------------------------------------------------- naming conventions
#
