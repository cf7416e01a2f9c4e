#!/usr/bin/python3
"""attnsweep_frame.py: the /trials of an attnsweep results file as a pandas DataFrame, and the
sweep as an xarray Dataset indexed by its swept axes.

    import sys
    sys.path.insert(0, "analysis")          # or PREFIX/share/attnsweep/analysis
    from attnsweep_frame import load_trials, sweep_axes, to_xarray

    df = load_trials("out.h5")               # one row per trial, index = trial
    df.groupby(["theorem", "d"], observed=True)["verdict"].value_counts(normalize=True)
    df[df.flag_good & (df.verdict == "violated")]
    df.attrs["descriptions"]["margin"]       # what a column means, from the file
    ds = to_xarray(df[df.case == "gap"])     # dims: the axes swept in that case

The frame (docs/analysis.md, "pandas and xarray"):
* one row per trial in plan order, index `trial`; every /trials field is a column;
* enumeration fields (theorem, verdict, vfamily, ..., and `case` when the file has it) are
  pandas Categoricals whose categories are the labels of the file's HDF5 enum type in value
  order (unused labels included, so counts show zeros);
* `case`: the case names. From the file's `case` field (an enum or a string) when it has one;
  for older files from the stored spec when its sweep is a (nested) `concat` of cases, matched
  by `case_id`; otherwise there is no `case` column;
* each bit of `flags` as a boolean column `flag_<name>` (the file's `flag:<name>` attributes
  of /trials when present, else schema.FLAG_BITS);
* fixed-length strings (message, hashes) as Python str without their NUL padding;
* df.attrs: `path`, `descriptions` and `units` (field -> text: the file's description:/units:
  attributes, else the built-in table of schema.py), `flag_bits`, `coordinates` (the sweep
  coordinate fields), `root` (tool version, spec SHA-256, seed, ... as schema reads them).

Needs pandas (Debian: python3-pandas); to_xarray needs xarray (python3-xarray). Reads the file
through schema.py only.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema  # noqa: E402


def _pandas():
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("attnsweep_frame needs pandas: apt-get install python3-pandas (and "
                          "run with /usr/bin/python3)")
    return pd


def _case_names_from_spec(text):
    """Case names of a stored spec whose sweep is a concat of cases (nested concats joined
    with '/', an unnamed case is case<i>), in case_id order; None when the spec has another
    shape or cannot be read (then the case_id column is all there is)."""
    try:
        import yaml
        doc = yaml.safe_load(text)
    except Exception:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("sweep"), dict):
        return None

    def walk(node, prefix, out):
        if not isinstance(node, dict):
            return False
        sub = node.get("concat")
        if sub is None:
            if "product" in node or "zip" in node:
                return False  # a product or zip over cases: not read here
            out.append(prefix)
            return True
        if not isinstance(sub, list):
            return False
        for i, child in enumerate(sub):
            name = child.get("case") if isinstance(child, dict) else None
            name = str(name) if name is not None else "case%d" % len(out)
            if not walk(child, prefix + "/" + name if prefix else name, out):
                return False
        return True

    top = doc["sweep"]
    if "concat" not in top:
        return None
    names = []
    return names if walk(top, str(top["case"]) if "case" in top else "", names) else None


def _text_column(col):
    return np.array([schema.text(bytes(v)).rstrip() if isinstance(v, (bytes, np.bytes_))
                     else v for v in col], dtype=object)


def load_trials(path, fields=None, where=None):
    """The /trials of the results file `path` as a pandas DataFrame (see the module doc).
    fields: read only these fields (default all; flag_<name> columns come with `flags`).
    where: keep the rows where this `attnsweep summarize --where` expression holds
    (e.g. "theorem == 'good' and d == 3"). Raises schema.FileAccessError (unreadable),
    schema.SchemaError (not a results file, unknown field), ImportError (no pandas)."""
    pd = _pandas()
    with schema.open_results(path) as rf:
        names = list(rf.fields) if fields is None else list(dict.fromkeys(fields))
        for nm in names:
            if nm not in rf.fields:
                rf.field_kind(nm)  # the SchemaError naming the valid fields
                raise schema.SchemaError("'%s' is a flag: ask for 'flags'" % nm)
        cols = rf.read(names)
        keep = None
        if where:
            import attnsweep_summarize
            try:
                keep = attnsweep_summarize.where_mask(rf, where)
            except attnsweep_summarize.UsageError as e:
                raise schema.SchemaError(str(e))
        data = {}
        coordinates = set(rf.coordinates()) - {"trial"}
        for nm in names:
            col = cols[nm]
            if rf.is_enum(nm):
                # -1 ("-") is "not applicable": NaN, not a category
                values = np.array(sorted(k for k in rf.enums[nm] if k >= 0), dtype=np.int64)
                v = col.astype(np.int64)
                if len(values):
                    idx = np.clip(np.searchsorted(values, v), 0, len(values) - 1)
                    idx[values[idx] != v] = -1  # a value the type does not name: NaN
                else:
                    idx = np.full(len(v), -1)
                data[nm] = pd.Categorical.from_codes(
                    idx, categories=[rf.enums[nm][k] for k in values])
            elif col.dtype.kind in "SV":
                data[nm] = _text_column(col)
            elif nm in schema.BOOL_FIELDS:  # true, false, -1 = not applicable: <NA>
                data[nm] = pd.array(np.where(col < 0, None, col == 1), dtype="boolean")
            elif col.dtype.kind in "iu" and (nm in schema.INT_FILL or nm in coordinates):
                # the fill value ("-1: none", rank_p 0; -1 in a coordinate) is <NA>
                fill = schema.INT_FILL.get(nm, -1)
                arr = pd.array(col, dtype="Int64" if col.dtype.itemsize > 4 else "Int32")
                arr[col == fill] = pd.NA
                data[nm] = arr
            else:
                data[nm] = col
        if "flags" in names:
            f = cols["flags"].astype(np.int64)
            for flag, bit in sorted(rf.flag_bits.items(), key=lambda t: t[1]):
                data["flag_" + flag] = (f >> bit) & 1 == 1
        trial = data.pop("trial") if "trial" in data else np.arange(rf.n_rows)
        df = pd.DataFrame(data, index=pd.Index(np.asarray(trial, dtype=np.int64),
                                               name="trial"))
        if "case_name" in df.columns and "case" not in df.columns:
            # schema 2: case_name is an enum whose labels are the case names
            df = df.rename(columns={"case_name": "case"})
        if "case" in df.columns and not isinstance(df["case"].dtype, pd.CategoricalDtype):
            df["case"] = pd.Categorical(df["case"])
        if "case" not in df.columns and "case_id" in df.columns:
            cases = _case_names_from_spec(rf.spec_text())
            ids = df["case_id"].to_numpy(dtype=np.int64, na_value=-1)
            if cases and len(ids) and ids.min() >= 0 and ids.max() < len(cases):
                df.insert(0, "case", pd.Categorical.from_codes(ids, categories=cases))
        coords = ["case" if c == "case_name" else c for c in rf.coordinates()]
        if "case" in df.columns and "case" not in coords:
            coords = ["case"] + coords
        df.attrs.update({
            "path": path,
            "descriptions": {c: rf.description(c) for c in df.columns if rf.description(c)},
            "units": {c: rf.unit(c) for c in df.columns if rf.unit(c)},
            "flag_bits": dict(rf.flag_bits),
            "coordinates": [c for c in coords if c in df.columns],
            "root": dict(rf.attrs),
        })
        if keep is not None:
            df = df[keep]
        return df


def sweep_axes(df):
    """The swept axes of df: its sweep-coordinate columns (df.attrs['coordinates']) that take
    more than one value in these rows, NaN ("not applicable") aside: a key with one value
    where it applies (perturb beside an eps axis that includes 0) follows the other axes and
    is not an axis of its own. `case` stands for `case_id` when both are there."""
    coords = list(df.attrs.get("coordinates", []))
    if "case" in coords and "case_id" in coords:
        coords.remove("case_id")
    out = []
    for c in coords:
        if c in df.columns and df[c].nunique(dropna=True) > 1:
            out.append(c)
    return out


def _zip_axes(df, axes):
    """Axes that are zipped (one to one with an earlier axis: each value of one goes with one
    value of the other, as `zip:` in a spec makes them) are one dimension: returns (the
    dimensions, {zipped axis: the dimension it goes along})."""
    dims, zipped = [], {}
    for a in axes:
        for d in dims:
            pair = df[[d, a]].astype(object).drop_duplicates()
            if pair[d].is_unique and pair[a].is_unique:
                zipped[a] = d
                break
        else:
            dims.append(a)
    return dims, zipped


def to_xarray(df, dims=None, max_cells=None):
    """An xarray Dataset of the rows of df with one dimension per swept axis (default:
    sweep_axes(df), zipped axes (one to one with an earlier axis) as one dimension, the later
    ones a coordinate along it) and every other column as a data variable (enum columns as
    their labels; nullable integers and booleans as floats with NaN for <NA>);
    variables carry `description` and `units` attributes, the Dataset the file's root
    attributes. Cells of the grid that no trial fills are NaN.
    ValueError when the axes do not identify the rows (name more dims), when an axis is NaN
    ("not applicable") on some rows only (a concat of cases: select one case first,
    df[df.case == NAME]), or when the grid would have more than max_cells cells (default
    10 x rows + 10^6: a sparse sweep, select a case first). ImportError without xarray."""
    try:
        import xarray  # noqa: F401 (pandas' to_xarray needs it)
    except ImportError:
        raise ImportError("to_xarray needs xarray: apt-get install python3-xarray")
    pd = _pandas()
    zipped = {}
    if dims is None:
        dims, zipped = _zip_axes(df, sweep_axes(df))
    dims = list(dims)
    if not dims:
        raise ValueError("no swept axis varies in these rows: give dims=")
    for d in dims:
        if d not in df.columns:
            raise ValueError("'%s' is not a column (columns: %s)" % (d, ", ".join(df.columns)))
        col = df[d]
        if col.isna().any() and not col.isna().all() and not hasattr(col, "cat"):
            raise ValueError("axis '%s' is NaN (not applicable) on %d of %d rows: select one "
                             "case first (df[df.case == NAME])" % (d, int(col.isna().sum()),
                                                                    len(col)))
    if df.duplicated(dims).any():
        raise ValueError("the axes %s do not identify the trials (several rows share values); "
                         "add the axes that tell them apart (varying columns: %s)" % (
                             ", ".join(dims), ", ".join(
                                 c for c in df.columns
                                 if c not in dims and df[c].nunique(dropna=False) > 1)[:400]))
    cells = 1
    for d in dims:
        cells *= int(df[d].nunique(dropna=False))
    limit = max_cells if max_cells is not None else 10 * len(df) + 10 ** 6
    if cells > limit:
        raise ValueError("the grid of %s has %d cells for %d trials: select one case first "
                         "(df[df.case == NAME]) or pass max_cells=" % (", ".join(dims), cells,
                                                                       len(df)))
    flat = df.reset_index()
    for c in flat.columns:  # categoricals become their labels (xarray keeps no categories)
        if hasattr(flat[c], "cat"):
            flat[c] = flat[c].astype(object)
        elif isinstance(flat[c].dtype, pd.BooleanDtype):  # nullable: <NA> becomes NaN
            flat[c] = flat[c].astype(object).where(flat[c].notna(), np.nan)
        elif pd.api.types.is_extension_array_dtype(flat[c].dtype):
            flat[c] = flat[c].astype("float64")
    ds = flat.set_index(dims).to_xarray()
    for z, p in zipped.items():  # a zipped axis: a coordinate along its partner's dimension
        pairs = flat[[p, z]].drop_duplicates().set_index(p)[z]
        ds = ds.drop_vars(z).assign_coords({z: (p, pairs.reindex(ds[p].values).to_numpy())})
    desc, units = df.attrs.get("descriptions", {}), df.attrs.get("units", {})
    for name in list(ds.variables):
        if name in desc:
            ds[name].attrs["description"] = desc[name]
        if name in units:
            ds[name].attrs["units"] = units[name]
    ds.attrs.update({k: (str(v) if not isinstance(v, (int, float, str)) else v)
                     for k, v in df.attrs.get("root", {}).items()})
    return ds


def load_bulk(path, trial, xarray=True):
    """The bulk data of one trial (docs/results.md, /bulk) as far as the file stores it:
    {'initial_tokens': (n, d), 'final_tokens': (n, d), 'final_attention': (n, n), 'V': (d, d),
    'M': (d, d), 'snapshots': (s, n, d)} numpy arrays; with xarray (default, when installed)
    'snapshots' is an xarray.DataArray with dimensions (time, token, dim) and the snapshot
    times as the `time` coordinate (/bulk/snapshots@times, else the stored spec), and
    'trajectory' the same from t = 0 (the initial tokens) to the snapshots, when both are
    stored. A trial that has not run, or a file without bulk data, gives {}. Raises
    schema.SchemaError for a trial outside the file."""
    with schema.open_results(path) as rf:
        out = rf.load_bulk(trial)
        times = rf.snapshot_times()
    if not xarray or "snapshots" not in out:
        return out
    try:
        import xarray as xr
    except ImportError:
        return out
    snaps = out["snapshots"]
    t = np.asarray(times, dtype=float)[:len(snaps)] if times is not None and \
        len(times) >= len(snaps) else np.arange(len(snaps), dtype=float)
    dims = ("time", "token", "dim")
    out["snapshots"] = xr.DataArray(snaps, dims=dims, coords={"time": t},
                                    name="snapshots", attrs={"trial": int(trial)})
    if "initial_tokens" in out:
        traj = np.concatenate([out["initial_tokens"][None], snaps])
        out["trajectory"] = xr.DataArray(traj, dims=dims,
                                         coords={"time": np.concatenate([[0.0], t])},
                                         name="trajectory", attrs={"trial": int(trial)})
    return out
