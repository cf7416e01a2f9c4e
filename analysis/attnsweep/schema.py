"""The one place where the analysis knows the layout of an attnsweep results file.

Everything else in analysis/ goes through this module. What it relies on (docs/results.md, the
results-file contract):

* /trials: a 1-D compound dataset, one row per trial in plan order (row = trial index). Its
  field names are the C names of AS_RECORD_FIELDS (include/attnsweep/record.h). Enumeration
  fields are HDF5 enum types; their labels (enums.h) are read from the file itself with
  h5py.check_enum_dtype, never assumed. `message` is a fixed-length byte string. Rows not yet
  run have outcome = verdict = "pending".
* Root attributes: n_trials, spec_sha256, the master seed, the tool version (read leniently:
  a missing attribute is reported as absent, never an error).
* Optional bulk data under /bulk, stored flat with deterministic offsets (see load_bulk).

Self-description, used when the file carries it (newer writers) and replaced by the fallbacks
below when it does not:
* /trials attributes `description:<field>` (one line; a trailing "[units]" is the unit),
  `units:<field>` (the unit alone), and `flag:<name>` (the bit number of flag <name> in
  `flags`). Without `flag:` attributes FLAG_BITS (the AS_FLAG_* enum of record.h, checked by
  the tests) is the legend; without descriptions FIELD_TEXT below, then the field name.
* /trials attribute `coordinates` (the names of the sweep-coordinate fields; otherwise the
  fields before `flags`).
* /bulk/snapshots attribute `times` (the snapshot times); otherwise they are read from the
  spec text stored in /spec (`output: {snapshots: [...]}`).

The layout of a row as the C definition says it (for writing synthetic files) is not parsed
here from the headers: attnsweep.layout reads it from the binary (`attnsweep help fields
--json`).

Only numpy and h5py (Debian's python3-numpy, python3-h5py) are needed.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .errors import FileAccessError, SchemaError

__all__ = ["Results", "open_results", "text", "SchemaError", "FileAccessError", "FLAG_BITS",
           "FIELD_TEXT", "REQUIRED_FIELDS", "ROOT_ATTRS", "INT_FILL", "BOOL_FIELDS",
           "SCHEMA_VERSION", "TRIALS", "BULK", "parse_theorem_table", "parse_near_hypotheses"]

# A running sweep holds the file open for writing; reading it is safe (rows are written
# whole), so do not let HDF5's file locking refuse the open.
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")

try:
    import h5py
except ImportError:  # reported by open_results with a clear message
    h5py = None

TRIALS = "trials"
BULK = "bulk"

#: AS_FLAG_* bits of the `flags` field (record.h), name -> bit. The names are usable as
#: `flag_<name>` in --by and --where.
FLAG_BITS = {
    "lead_real": 0,
    "lead_positive": 1,
    "lead_simple": 2,
    "lead_dominant": 3,
    "margin_positive": 4,
    "good": 5,
    "m_symmetric": 6,
    "m_spd": 7,
    "m_identity": 8,
    "v_identity": 9,
    "v_minus_identity": 10,
    "paranormal": 11,
    "complex_lead": 12,
    "distributed": 13,
    "v_diagonalisable": 14,
}

#: Short human names and units of the fields figures put on their axes, for files that do not
#: describe their fields (/trials attributes description:<field>, units:<field>). Units: the
#: file's units win when it has them.
FIELD_TEXT = {
    "d": ("dimension d", ""), "n": ("number of tokens n", ""),
    "eps": ("perturbation size eps", ""), "T": ("horizon T", "time"),
    "dt": ("time step dt", "time"), "v_scale": ("scale s of V", ""),
    "v_lambda": ("lambda of V", ""), "v_gap": ("spectral gap of V (family parameter)", ""),
    "v_radius": ("spectral radius of V on G", ""), "v_imag": ("imaginary part of lambda_1", ""),
    "m_scale": ("scale s of M", ""), "m_cond": ("condition number of M", ""),
    "margin_target": ("imposed <Q phi_1, K phi_1>", ""),
    "init_scale": ("scale of the initial tokens", ""),
    "gap": ("spectral gap lambda_1 - |lambda_2|", ""),
    "margin": ("<Q phi_1, K phi_1>", ""), "m_min_sym_eig": ("min eigenvalue of sym(M)", ""),
    "m_asym": ("asymmetry ||M - M^T|| / ||M||", ""),
    "angle_l1_phi1": ("angle between l_1 and phi_1", "degrees"),
    "eig_cond": ("condition number of V's eigenvectors", ""),
    "settle_time": ("settle time", "time"), "t_final": ("time reached", "time"),
    "wall_time": ("wall time", "s"), "n_clusters": ("number of clusters", ""),
    "rank_p": ("rank of P", ""), "lambda1_re": ("Re lambda_1", ""),
    "kpos": ("eigenvalues of V with Re > 0", ""),
    "theorem": ("theorem whose hypotheses hold", ""), "vfamily": ("family of V", ""),
    "mfamily": ("family of Q, K", ""), "init": ("initial distribution", ""),
    "method": ("integrator", ""), "replicate": ("replicate", ""),
}

#: Fields the summary needs; a /trials without them is not a results file.
REQUIRED_FIELDS = ("verdict", "outcome")

#: Root attributes shown in the summary header, with the names they may carry.
ROOT_ATTRS = {
    "n_trials": ("n_trials",),
    "spec_sha256": ("spec_sha256", "spec_sha"),
    "master_seed": ("master_seed", "seed", "rng_seed"),
    "tool_version": ("tool_version", "version", "attnsweep_version"),
    "git_revision": ("git_revision", "git", "git_rev"),
    "schema_version": ("schema_version",),
    "start_time": ("start_time",),
    "end_time": ("end_time",),
    "spec_name": ("spec_name",),
    "source_file": ("source_file",),
    "source_trial": ("source_trial",),
}

#: Integer fill values ("not applicable / not measured") of measured record fields
#: (include/attnsweep/record.h names them in each field's description, "(-1: none)"; checked
#: by tests/py/test_stat.py). Integer sweep coordinates use -1 (docs/results.md).
INT_FILL = {"rank_p": 0, "n_plateaus": -1, "n_clusters_track": -1, "hull_vertices": -1,
            "hull_vertices_init": -1, "ref_n_clusters": -1, "rank_p_head_min": -1,
            "rank_p_head_max": -1, "sinkhorn_missed": -1}
#: The BOOL keys of the parameter table (AS_PARAM_LIST, include/attnsweep/params.h): stored as
#: int32 1 (true), 0 (false), -1 (not applicable); checked by tests/py/test_schema.py.
BOOL_FIELDS = ("v_oblique", "skip", "ffn_bias")

#: The newest schema_version (root attribute) this analysis knows.
SCHEMA_VERSION = 4


_UNITS_SUFFIX = re.compile(r"\s*\[([^\[\]]*)\]\s*$")


def _text(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _text(v[()])
    if isinstance(v, np.generic):
        return v.item()
    return v


def text(v: Any) -> Any:
    """A value read from the file as Python text/number: bytes decoded (UTF-8) without their
    NUL padding, numpy scalars as Python scalars."""
    v = _text(v)
    return v.rstrip("\0") if isinstance(v, str) else v


def parse_theorem_table(text: str) -> List[Dict[str, str]]:
    """The /trials attribute theorem_table (src/core/theorem.c, as_theorem_table_text): one line
    per theorem in precedence order, tab-separated fields label, model, hypotheses on V, on
    Q^T K, prediction, reference, LaTeX name, LaTeX hypotheses, LaTeX prediction. Returns a list
    of dicts with those keys. SchemaError when it does not parse."""
    keys = ("label", "model", "hyp_v", "hyp_m", "prediction", "reference", "tex_name",
            "tex_hyp", "tex_pred")
    rows = []
    for line in str(text).split("\n"):
        cells = line.split("\t")
        if len(cells) != len(keys):
            raise SchemaError("/trials attribute theorem_table does not parse: %r" % line)
        rows.append(dict(zip(keys, cells)))
    return rows


def parse_near_hypotheses(text: str) -> List[Tuple[str, List[str]]]:
    """The /trials attribute near_hypotheses, "d1: dist_gap dist_m_posdef; identity: ...", as
    [(theorem, [fields])] in its order. SchemaError when it does not parse."""
    out = []
    for part in str(text).split(";"):
        name, sep, fields = part.partition(":")
        if not sep or not name.strip():
            raise SchemaError("/trials attribute near_hypotheses does not parse: %r" % text)
        out.append((name.strip(), fields.split()))
    return out


class Results:
    """An open results file. Use as a context manager or call close()."""

    def __init__(self, path: str) -> None:
        if h5py is None:
            raise FileAccessError(
                "Python module h5py is missing: apt-get install python3-h5py "
                "(and run with /usr/bin/python3)")
        self.path = path
        try:
            self._f = h5py.File(path, "r")
        except FileNotFoundError:  # bad input, as `attnsweep status` says it (exit 2)
            raise SchemaError("%s: no such file" % path)
        except OSError as e:
            raise FileAccessError("%s: cannot open as HDF5: %s" % (path, e))
        if "trial_index" in self._f:  # a shard's sparse file (its own rows only)
            self._f.close()
            raise SchemaError("%s is one shard of a job array (its own rows only): merge the "
                              "shards first (attnsweep merge OUT.h5 SHARD...)" % path)
        if TRIALS not in self._f or not isinstance(self._f[TRIALS], h5py.Dataset):
            self._f.close()
            raise SchemaError("%s: no /trials dataset: not an attnsweep results file" % path)
        ds = self._f[TRIALS]
        if ds.dtype.names is None or len(ds.shape) != 1:
            self._f.close()
            raise SchemaError("%s: /trials is not a 1-D compound dataset" % path)
        missing = [f for f in REQUIRED_FIELDS if f not in ds.dtype.names]
        if missing:
            self._f.close()
            raise SchemaError("%s: /trials lacks the field(s) %s" % (path, ", ".join(missing)))
        self._ds = ds
        #: columns read so far (name -> array): the tables of one command read the same
        #: columns many times (a 10^6-row report reads each once)
        self._cache: Dict[str, np.ndarray] = {}
        self.n_rows = int(ds.shape[0])
        self.fields = list(ds.dtype.names)
        self.enums = {}
        for name in self.fields:
            mapping = h5py.check_enum_dtype(ds.dtype[name])
            if mapping:
                labels = {}
                for label, value in mapping.items():
                    labels[int(value)] = label
                self.enums[name] = labels
        self.descriptions, self.units, legend = {}, {}, {}
        for k in ds.attrs.keys():
            head, sep, tail = k.partition(":")
            if not sep or not tail:
                continue
            try:
                v = _text(ds.attrs[k])
            except (OSError, TypeError, ValueError):
                continue
            if head == "description" and isinstance(v, str):
                self.descriptions[tail] = v.strip()
            elif head in ("units", "unit") and isinstance(v, str):
                self.units[tail] = v.strip()
            elif head == "flag" and isinstance(v, (int, np.integer)):
                legend[tail] = int(v)
        #: [(theorem, [dist_ fields])] in the nearest-theorem precedence order, from the
        #: /trials attribute near_hypotheses (the theorem table's near column); None in files
        #: without it
        self.near_hypotheses = None
        if "near_hypotheses" in ds.attrs:
            self.near_hypotheses = parse_near_hypotheses(_text(ds.attrs["near_hypotheses"]))
        #: Table 1 of the file: [dict] in precedence order from the /trials attribute
        #: theorem_table (the C theorem table); None in files written before it existed
        self.theorem_table = None
        if "theorem_table" in ds.attrs:
            self.theorem_table = parse_theorem_table(_text(ds.attrs["theorem_table"]))
        #: flag name -> bit of `flags`: the file's legend when it has one
        self.flag_bits = legend or dict(FLAG_BITS)
        self.attrs = {}
        for key, names in ROOT_ATTRS.items():
            for n in names:
                if n in self._f.attrs:
                    self.attrs[key] = _text(self._f.attrs[n])
                    break

    def root_attributes(self) -> Dict[str, Any]:
        """Every root attribute of the file as text (docs/results.md, "Root attributes"), for
        provenance: name -> value, in the file's order (attrs above holds the few the tables
        use, under their stable names)."""
        return {k: _text(self._f.attrs[k]) for k in self._f.attrs.keys()}

    def __enter__(self) -> "Results":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "_f", None) is not None:
            self._f.close()
            self._f = None

    # ------------------------------------------------------------ enumerations
    def _name(self, field: str) -> str:
        """`case` is the name of the case column everywhere (the frame, --by, --where); the
        file's field is `case_name` (record.h)."""
        if field == "case" and "case" not in self.fields and "case_name" in self.fields:
            return "case_name"
        return field

    def is_enum(self, field: str) -> bool:
        field = self._name(field)
        return field in self.enums

    def label(self, field: str, value: Any) -> str:
        """Label of one enum value ("?<v>" when the file's type has no such value)."""
        field = self._name(field)
        return self.enums[field].get(int(value), "?%d" % int(value))

    def code(self, field: str, label: str) -> int:
        """Value of an enum label in the file's type; SchemaError naming the valid labels."""
        field = self._name(field)
        for v, l in self.enums[field].items():
            if l == label:
                return v
        raise SchemaError("'%s' is not a value of %s (one of: %s)" % (
            label, field, ", ".join(self.labels(field))))

    def labels(self, field: str) -> List[str]:
        """The labels of an enum field in value order."""
        field = self._name(field)
        return [self.enums[field][v] for v in sorted(self.enums[field])]

    def has_code(self, field: str, label: str) -> bool:
        field = self._name(field)
        return any(l == label for l in self.enums.get(field, {}).values())

    # ------------------------------------------------------------ rows
    def field_kind(self, field: str) -> str:
        """'enum', 'int', 'float', 'bytes' or 'flag' (a flag_<name> pseudo-field)."""
        field = self._name(field)
        if field.startswith("flag_") and field[5:] in self.flag_bits and \
                field not in self.fields and "flags" in self.fields:
            return "flag"
        if field not in self.fields:
            raise SchemaError("no field '%s' in /trials (fields: %s; flags: %s)" % (
                field, ", ".join(self.fields),
                ", ".join("flag_" + f for f in self.flag_bits)))
        if field in self.enums:
            return "enum"
        k = self._ds.dtype[field].kind
        if k in "iu":
            return "int"
        if k == "f":
            return "float"
        return "bytes"

    def read(self, names: Iterable[str], chunk: int = 1 << 18) -> Dict[str, np.ndarray]:
        """Columns of /trials as a dict name -> 1-D numpy array (n_rows). Enum fields come as
        their integer values; flag_<name> pseudo-fields as bool arrays. Reads only the
        requested fields, in chunks, so memory stays proportional to what is asked."""
        names = list(dict.fromkeys(names))
        need = []
        for nm in names:
            kind = self.field_kind(nm)
            base = "flags" if kind == "flag" else self._name(nm)
            if base not in self.fields:
                raise SchemaError("no field '%s' in /trials" % base)
            if base not in need:
                need.append(base)
        out: Dict[str, np.ndarray] = {}
        cols: Dict[str, np.ndarray] = {nm: self._cache[nm] for nm in need if nm in self._cache}
        need = [nm for nm in need if nm not in cols]
        for nm in need:
            dt = self._ds.dtype[nm]
            if nm in self.enums:
                dt = np.dtype(dt.base if dt.base is not None else dt)
                dt = np.dtype(dt.str)  # drop the enum metadata: plain integers
            cols[nm] = np.empty(self.n_rows, dtype=dt)
        try:
            view = self._ds.fields(need) if len(need) > 1 else \
                self._ds.fields(need[0]) if need else None
            for a in range(0, self.n_rows if need else 0, chunk):
                b = min(self.n_rows, a + chunk)
                block = view[a:b]
                if len(need) == 1:
                    cols[need[0]][a:b] = block
                else:
                    for nm in need:
                        cols[nm][a:b] = block[nm]
        except OSError as e:
            raise FileAccessError("%s: reading /trials failed: %s" % (self.path, e))
        for nm in need:  # the columns of one open file do not change while it is read
            self._cache[nm] = cols[nm]
        for nm in names:
            if self._name(nm) in cols:
                out[nm] = cols[self._name(nm)]
            else:
                bit = self.flag_bits[nm[5:]]
                out[nm] = (cols["flags"].astype(np.int64) >> bit) & 1 == 1
        return out

    # ------------------------------------------------------------ self-description
    def description(self, field: str) -> Optional[str]:
        """One-line meaning of a field: the file's description:<field> attribute without its
        "[units]" suffix, else FIELD_TEXT, else None. flag_<name> pseudo-fields: "flag <name>"."""
        field = self._name(field)
        if field.startswith("flag_") and field not in self.fields:
            return "flag %s" % field[5:]
        text = self.descriptions.get(field)
        if text:
            return _UNITS_SUFFIX.sub("", text).strip() or None
        if field in FIELD_TEXT:
            return FIELD_TEXT[field][0]
        return None

    def unit(self, field: str) -> str:
        """Unit of a field ("" when dimensionless or unknown): units:<field>, the "[units]" at
        the end of description:<field>, else FIELD_TEXT."""
        field = self._name(field)
        if field in self.units:
            return self.units[field]
        m = _UNITS_SUFFIX.search(self.descriptions.get(field, ""))
        if m:
            return m.group(1).strip()
        return FIELD_TEXT.get(field, ("", ""))[1]

    def axis_label(self, field: str) -> str:
        """A human axis label: description and unit, e.g. "perturbation size eps" or
        "wall time [s]"; the field name when nothing is known about it."""
        text = self.description(field) or field
        u = self.unit(field)
        return "%s [%s]" % (text, u) if u else text

    def coordinates(self) -> List[str]:
        """The sweep-coordinate fields (what identifies a trial's point of the sweep): the
        `coordinates` attribute of /trials when the writer gives one, else the fields before
        `flags` (the first group of AS_RECORD_FIELDS), without `trial`."""
        if "coordinates" in self._ds.attrs:
            return [_text(c) for c in np.ravel(self._ds.attrs["coordinates"])
                    if _text(c) in self.fields]
        if "flags" not in self.fields:
            return []
        return [f for f in self.fields[:self.fields.index("flags")] if f != "trial"]

    def common_keys(self) -> List[str]:
        """The sweep keys whose trials share their random draws (the root attribute
        `common_keys` written for a spec's `common:` setting), a list of field names; [] when
        the file has no such attribute."""
        if "common_keys" not in self._f.attrs:
            return []
        v = self._f.attrs["common_keys"]
        items = [text(x) for x in np.ravel(v)] if isinstance(v, np.ndarray) and v.shape \
            else [text(v)]
        out = []
        for it in items:
            out += [k for k in re.split(r"[\s,]+", str(it)) if k]
        return out

    def spec_text(self) -> str:
        """The spec text stored in /spec ("" when absent)."""
        if "spec" not in self._f or not isinstance(self._f["spec"], h5py.Dataset):
            return ""
        v = _text(self._f["spec"][()])
        if isinstance(v, np.ndarray):
            v = "".join(_text(x) for x in v.ravel())
        return v if isinstance(v, str) else ""

    def snapshot_times(self) -> Optional[List[float]]:
        """Times of the stored snapshots (a list of floats), or None when unknown: the `times`
        attribute of /bulk/snapshots, else output.snapshots of the stored spec (needs
        python3-yaml)."""
        if BULK in self._f and "snapshots" in self._f[BULK]:
            a = self._f[BULK]["snapshots"].attrs
            if "times" in a:
                return [float(t) for t in np.ravel(a["times"])]
        text = self.spec_text()
        if not text:
            return None
        try:
            import yaml
            doc = yaml.safe_load(text)
            times = doc["output"]["snapshots"]
            return [float(t) for t in times]
        except Exception:  # no yaml module, no such key, odd values: unknown
            return None

    # ------------------------------------------------------------ bulk data
    def bulk_names(self) -> List[str]:
        if BULK not in self._f:
            return []
        return sorted(k for k in self._f[BULK].keys() if not k.endswith("_offset"))

    def bulk_slabs(self, name: str) -> Optional[Callable[[int], Optional[np.ndarray]]]:
        """A reader of one bulk kind for many trials: a function trial -> the flat float
        array of its slab (None when not stored for that trial), reading the offsets once;
        None when the file has no /bulk/<name> with offsets."""
        if BULK not in self._f or name not in self._f[BULK] or \
                name + "_offset" not in self._f[BULK]:
            return None
        ds = self._f[BULK][name]
        off = np.asarray(self._f[BULK][name + "_offset"][()], dtype=np.int64)
        if len(off) != self.n_rows + 1:
            raise SchemaError("%s: /bulk/%s_offset has %d entries, not n_trials + 1 = %d" %
                              (self.path, name, len(off), self.n_rows + 1))

        def slab(trial: int) -> Optional[np.ndarray]:
            a, b = int(off[trial]), int(off[trial + 1])
            if b <= a or b > ds.shape[0]:
                return None
            try:
                return np.asarray(ds[a:b], dtype=float)
            except OSError as e:
                raise FileAccessError("%s: reading /bulk/%s failed: %s" % (self.path, name, e))
        return slab

    def load_bulk(self, trial: int) -> Dict[str, np.ndarray]:
        """Bulk arrays of one trial, as far as the file has them, as numpy arrays:
        {'initial_tokens': (n, d), 'final_tokens': (n, d), 'final_attention': (n, n),
         'V': (d, d), 'M': (d, d), 'snapshots': (s, n, d)}.
        Layout (docs/results.md, include/attnsweep/results.h AS_BULK_LIST): /bulk/<name> is a
        flat double array and /bulk/<name>_offset (n_trials + 1 prefix sums) says that trial i
        occupies [offset[i], offset[i + 1]); an empty slab means "not stored for this trial".
        Slabs have no fill value: only trials whose outcome is not pending are returned."""
        out: Dict[str, np.ndarray] = {}
        trial = int(trial)
        if trial < 0 or trial >= self.n_rows:
            raise SchemaError("trial %d is not in 0..%d" % (trial, self.n_rows - 1))
        if BULK not in self._f:
            return out
        g = self._f[BULK]
        want = ["n", "d", "outcome"]
        cols = self.read(want)
        if self.has_code("outcome", "pending") and \
                cols["outcome"][trial] == self.code("outcome", "pending"):
            return out
        n = cols["n"].astype(np.int64)
        d = cols["d"].astype(np.int64)
        ni, di = int(n[trial]), int(d[trial])
        per = {"initial_tokens": (n * d, (ni, di)), "final_tokens": (n * d, (ni, di)),
               "final_attention": (n * n, (ni, ni)), "V": (d * d, (di, di)),
               "M": (d * d, (di, di)), "snapshots": (None, (-1, ni, di))}
        for name, (sizes, shape) in per.items():
            if name not in g or not isinstance(g[name], h5py.Dataset):
                continue
            ds = g[name]
            if name + "_offset" in g:
                off = g[name + "_offset"]
                start, stop = int(off[trial]), int(off[trial + 1])
            elif sizes is not None:  # no offsets: prefix sums of the plan's sizes
                start = int(np.sum(sizes[:trial]))
                stop = start + int(sizes[trial])
            else:
                continue
            if stop <= start or stop > ds.shape[0]:
                continue
            arr = np.asarray(ds[start:stop], dtype=float)
            block = int(np.prod([abs(x) for x in shape]))
            if block == 0 or arr.size % block:
                raise SchemaError("/bulk/%s of trial %d has %d values, not a multiple of %s" %
                                  (name, trial, arr.size, "x".join(map(str, shape[-2:]))))
            out[name] = arr.reshape(shape)
        return out

def open_results(path: str) -> Results:
    """The results file at path, open (a context manager). SchemaError: not a results file
    (or missing); FileAccessError: unreadable."""
    return Results(path)
