"""The layout of a /trials row as the binary states it: `attnsweep help fields --json`.

The analysis reads results files through their own HDF5 types (schema.py); what needs the
layout of the C definition without a file at hand (tests and benchmarks that write synthetic
results files, the check that schema.py's fallback tables match the record) asks the binary
that writes the files, never the C headers:

    from attnsweep import layout
    dt = layout.record_dtype()                   # numpy dtype of a row, enums as HDF5 enums
    layout.enum_labels()["verdict"]              # ['pending', 'consistent', ...]
    layout.fields()[0]                           # {'name': 'trial', 'kind': 'U64', ...}

The binary is the `binary` argument, else $ATTNSWEEP, else `attnsweep` on PATH. Each binary
is asked once per process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from .errors import FileAccessError

_CACHE: Dict[str, Dict[str, Any]] = {}


def binary_path(binary: Optional[str] = None) -> str:
    """The attnsweep executable to ask: `binary`, else $ATTNSWEEP, else `attnsweep` on PATH.
    FileAccessError when there is none."""
    path = binary or os.environ.get("ATTNSWEEP") or shutil.which("attnsweep")
    if not path:
        raise FileAccessError("the field layout comes from the attnsweep binary (`attnsweep help "
                              "fields --json`): set ATTNSWEEP to it or put it on PATH")
    return path


def describe(binary: Optional[str] = None) -> Dict[str, Any]:
    """The parsed output of `attnsweep help fields --json`: {'schema_version', 'record_msg',
    'fields': [{'name', 'kind', 'dtype', 'doc', 'key'?, 'key_kind'?, 'enum'?}], 'flags':
    {name: bit}}. An enumeration field's 'enum' is {'type', 'labels': [[label, value], ...]
    or None (labels of the spec: case_name, file, ...), 'not_applicable': -1 or None}."""
    path = binary_path(binary)
    if path not in _CACHE:
        try:
            res = subprocess.run([path, "help", "fields", "--json"], capture_output=True,
                                 text=True, check=False, timeout=60)
        except OSError as e:
            raise FileAccessError("cannot run %s help fields --json: %s" % (path, e))
        if res.returncode != 0:
            raise FileAccessError("%s help fields --json failed (exit %d): %s" % (
                path, res.returncode, res.stderr.strip()))
        _CACHE[path] = json.loads(res.stdout)
    return _CACHE[path]


def fields(binary: Optional[str] = None) -> List[Dict[str, Any]]:
    """The fields of a /trials row in order (describe()['fields'])."""
    return list(describe(binary)["fields"])


def flag_bits(binary: Optional[str] = None) -> Dict[str, int]:
    """The AS_FLAG_* bits of `flags`: lower-case name -> bit."""
    return dict(describe(binary)["flags"])


def enum_labels(binary: Optional[str] = None) -> Dict[str, List[str]]:
    """field -> its labels in value order (without "-", the "not applicable" -1 of a sweep
    key's enumeration), for the enumeration fields whose labels the binary fixes (not the
    labels of a spec: case_name, file, init_file, init_dataset)."""
    out = {}
    for f in fields(binary):
        labs = (f.get("enum") or {}).get("labels")
        if labs:
            out[f["name"]] = [lab for lab, v in sorted(labs, key=lambda t: t[1]) if v >= 0]
    return out


def bool_fields(binary: Optional[str] = None) -> List[str]:
    """The record fields of the true/false sweep keys (stored as int32 1, 0, -1)."""
    return [f["name"] for f in fields(binary) if f.get("key_kind") == "bool"]


def record_dtype(binary: Optional[str] = None,
                 labels: Optional[Mapping[str, Sequence[str]]] = None) -> np.dtype:
    """The numpy (h5py) compound dtype of a /trials row, packed and little-endian as the file
    stores it, enumeration fields as HDF5 enums with the binary's labels. labels: field ->
    labels (values 0, 1, ...) for the fields whose labels come from a spec (case_name, ...);
    default ["case0"]. For writing synthetic results files; the analysis reads the dtype of
    each file from the file."""
    import h5py
    labels = labels or {}
    spec = []
    for f in fields(binary):
        enum = f.get("enum")
        if enum is None:
            spec.append((f["name"], np.dtype(f["dtype"])))
            continue
        if enum.get("labels"):
            members = {lab: int(v) for lab, v in enum["labels"]}
        else:
            names = labels.get(f["name"]) or ["case0"]
            members = {lab: i for i, lab in enumerate(names)}
            if enum.get("not_applicable") is not None:
                members["-"] = int(enum["not_applicable"])
        spec.append((f["name"], h5py.enum_dtype(members, basetype="<i4")))
    return np.dtype(spec)
