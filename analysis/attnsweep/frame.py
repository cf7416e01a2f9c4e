"""The /trials of an attnsweep results file as a pandas DataFrame, and the
sweep as an xarray Dataset indexed by its swept axes.

    from attnsweep import load_trials, sweep_axes, to_xarray, from_netcdf

    df = load_trials("out.h5")               # one row per trial, index = trial
    df.groupby(["theorem", "d"], observed=True)["verdict"].value_counts(normalize=True)
    df[df.flag_good & (df.verdict == "violated")]
    df.attrs["descriptions"]["margin"]       # what a column means, from the file
    ds = to_xarray(df[df.case == "gap"])     # dims: the axes swept in that case
    ds.to_netcdf("gap.nc")                   # any netCDF backend: netCDF4, h5netcdf, scipy
    ds = from_netcdf("gap.nc")               # the same Dataset back, booleans as booleans

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

The Dataset (docs/analysis.md, "netCDF"): every variable has a dtype that each netCDF backend
writes (netCDF4, h5netcdf, and scipy's netCDF 3):
* booleans with every cell known as numpy bool (xarray stores them as int8 0/1); a boolean
  with <NA> or a grid cell no trial fills as float64 1.0/0.0/NaN, stored as int8 with
  _FillValue -1; both carry the CF attributes flag_values = [0, 1] (int8) and
  flag_meanings = "false true", which from_netcdf reads back;
* enum labels as str with NaN for "not applicable" (stored as "": netCDF has no missing
  string; the attribute missing_label = "" says so and from_netcdf gives NaN back);
* the root attributes as str, int (int32 range) or float; the master seed (a uint64) and any
  integer beyond int32 as a decimal string, every digit kept.

Needs pandas (Debian: python3-pandas); to_xarray needs xarray (python3-xarray); a netCDF file
needs one of python3-netcdf4, python3-h5netcdf, python3-scipy. Reads the results file through
schema.py only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import schema
from .errors import UsageError

if TYPE_CHECKING:
    import pandas
    import xarray

#: The CF attributes of a boolean variable in to_xarray's Dataset and its netCDF files.
BOOL_FLAG_VALUES = np.array([0, 1], dtype=np.int8)
BOOL_FLAG_MEANINGS = "false true"
#: The stored value of a boolean's "unknown" cell (<NA>, or no trial): its _FillValue.
BOOL_FILL = np.int8(-1)
#: Root attributes written as decimal strings whatever their value (a uint64 seed: netCDF 3
#: has no 64-bit integer, and a float would lose digits).
STRING_ATTRS = ("master_seed",)
#: xarray's netCDF engines, the module each needs and its Debian package, in xarray's order of
#: preference when reading. Writing without engine= takes netcdf4, else scipy (never h5netcdf).
NETCDF_ENGINES = (("netcdf4", "netCDF4", "python3-netcdf4"),
                  ("h5netcdf", "h5netcdf", "python3-h5netcdf"),
                  ("scipy", "scipy.io", "python3-scipy"))


def _pandas():
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("attnsweep.frame needs pandas: apt-get install python3-pandas (and "
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
    names: List[str] = []
    return names if walk(top, str(top["case"]) if "case" in top else "", names) else None


def _text_column(col):
    return np.array([schema.text(bytes(v)).rstrip() if isinstance(v, (bytes, np.bytes_))
                     else v for v in col], dtype=object)


def load_trials(path: str, fields: Optional[Sequence[str]] = None, where: Optional[str] = None
                 ) -> "pandas.DataFrame":
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
            from .selection import where_mask
            try:
                keep = where_mask(rf, where)
            except UsageError as e:
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
                data[nm] = pd.array(np.where(col < 0, None, col == 1),  # type: ignore
                                    dtype="boolean")
            elif col.dtype.kind == "i" and (nm in schema.INT_FILL or nm in coordinates):
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


def sweep_axes(df: "pandas.DataFrame") -> List[str]:
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
    dims: List[str] = []
    zipped: Dict[str, str] = {}
    for a in axes:
        for d in dims:
            pair = df[[d, a]].astype(object).drop_duplicates()
            if pair[d].is_unique and pair[a].is_unique:
                zipped[a] = d
                break
        else:
            dims.append(a)
    return dims, zipped


def _xarray():
    try:
        import xarray as xr
    except ImportError:
        raise ImportError("to_xarray needs xarray: apt-get install python3-xarray (and run "
                          "with /usr/bin/python3)")
    return xr


def to_xarray(df: pandas.DataFrame, dims: list[str] | None = None,
              max_cells: int | None = None) -> xarray.Dataset:
    """An xarray Dataset of the rows of df with one dimension per swept axis (default:
    sweep_axes(df), zipped axes (one to one with an earlier axis) as one dimension, the later
    ones a coordinate along it) and every other column as a data variable (enum columns as
    their labels, NaN for "not applicable"; nullable integers as floats with NaN for <NA>;
    booleans as bool where every cell is known, else as floats 1/0 with NaN, both with the
    CF attributes flag_values/flag_meanings); variables carry `description` and `units`
    attributes, the Dataset the file's root attributes (the master seed as a decimal string).
    Cells of the grid that no trial fills are NaN. Every netCDF backend writes the result
    (ds.to_netcdf(path, engine=...)); from_netcdf(path) reads it back (module doc).
    ValueError when the axes do not identify the rows (name more dims), when an axis is NaN
    ("not applicable") on some rows only (a concat of cases: select one case first,
    df[df.case == NAME]), or when the grid would have more than max_cells cells (default
    10 x rows + 10^6: a sparse sweep, select a case first). ImportError without xarray."""
    xr = _xarray()
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
    df, joined = join_baselines(df, dims)
    for d in dims:
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
    booleans, labels = [], []
    for c in flat.columns:
        dt = flat[c].dtype
        if hasattr(flat[c], "cat"):  # categoricals become their labels (xarray keeps none)
            flat[c] = flat[c].astype(object)
            labels.append(c)
        elif isinstance(dt, pd.BooleanDtype) or dt == np.bool_:
            # 1.0/0.0, <NA> NaN: xarray would make an object array of a boolean with a hole,
            # which the netCDF4 and h5netcdf backends refuse; bool again below where it can
            flat[c] = flat[c].astype("float64")
            booleans.append(c)
        elif pd.api.types.is_extension_array_dtype(dt):
            flat[c] = flat[c].astype("float64")
    ds = flat.set_index(dims).to_xarray()
    for z, p in zipped.items():  # a zipped axis: a coordinate along its partner's dimension
        pairs = flat[[p, z]].drop_duplicates().set_index(p)[z]
        ds = ds.drop_vars(z).assign_coords({z: (p, pairs.reindex(ds[p].values).to_numpy())})
    ds = _replace_variables(ds, {c: _boolean_variable(xr, ds.variables[c]) for c in booleans})
    for c in labels:
        ds.variables[c].attrs["missing_label"] = ""
    desc, units = df.attrs.get("descriptions", {}), df.attrs.get("units", {})
    for name in list(ds.variables):
        if name in desc:
            ds.variables[name].attrs["description"] = desc[name]
        if name in units:
            ds.variables[name].attrs["units"] = units[name]
    ds.attrs.update({k: _attr_value(k, v) for k, v in df.attrs.get("root", {}).items()})
    if joined:
        ds.attrs["baseline"] = "; ".join(
            "the %d trials at eps = 0 (%s not applicable) joined each value of %s" % (n, a, a)
            for a, n in joined.items())
    return ds


def join_baselines(df: pandas.DataFrame,
                   dims: Sequence[str]) -> Tuple[pandas.DataFrame, Dict[str, int]]:
    """The eps = 0 baseline joins each curve (issue 48): a trial at eps = 0 records the keys
    that say what eps perturbs (`perturb`) as not applicable (NaN), so an axis that is NaN on
    eps = 0 rows only gets, for those rows, each of its values. Where the baseline trials of a
    point of the other axes are as many as the axis' values (a product over the axis, as
    jobs/examples/perturbed.yaml: one baseline trial per curve), the k-th (in plan order)
    joins the k-th value (in order of appearance); where there is one, it joins every value
    (the trial repeated); else ValueError. Returns (the rows, {axis: baseline trials})."""
    pd = _pandas()
    if "eps" not in df.columns or "eps" not in dims:
        return df, {}
    joined = {}
    for a in dims:
        if a == "eps":
            continue
        na = df[a].isna().to_numpy()
        eps0 = (df["eps"] == 0).to_numpy()
        if not na.any() or na.all() or (na & ~eps0).any():
            continue
        rest, base = df[~na], df[na].sort_index(kind="stable")
        values = list(pd.unique(rest[a]))
        other = [d for d in dims if d != a]
        if other:
            grp = base.groupby(other, sort=False, dropna=False, observed=True)
            rank = grp.cumcount().to_numpy()
            size = grp[other[0]].transform("size").to_numpy()
        else:
            rank = np.arange(len(base))
            size = np.full(len(base), len(base))
        if not np.all((size == 1) | (size == len(values))):
            raise ValueError("the %d trials at eps = 0 (%s not applicable) do not match the %d "
                             "values of %s: select the rows of one curve first" % (
                                 len(base), a, len(values), a))
        each = base[size == len(values)].copy()
        each[a] = _like(rest[a], [values[k] for k in rank[size == len(values)]])
        one = base[size == 1]
        reps = []
        for v in values:
            r = one.copy()
            r[a] = _like(rest[a], [v] * len(r))
            reps.append(r)
        df = pd.concat([rest, each] + reps)
        joined[a] = len(base)
    return df, joined


def _like(col: Any, values: List[Any]) -> Any:
    """values as a column of col's dtype (a Categorical keeps its categories)."""
    pd = _pandas()
    if hasattr(col, "cat"):
        return pd.Categorical(values, categories=col.cat.categories)
    return np.asarray(values, dtype=col.dtype)


def _attr_value(name, v):
    """A root attribute as a value every netCDF format stores: str, an int in the int32 range
    (netCDF 3 has no 64-bit integer), a float; the seed and wider integers as decimal text."""
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode("utf-8", "replace")
    if isinstance(v, (str, np.str_)):
        return str(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        v = int(v)
        return str(v) if name in STRING_ATTRS or not -2 ** 31 <= v < 2 ** 31 else v
    if isinstance(v, (float, np.floating)):
        return float(v)
    return str(v)


def _boolean_variable(xr, var):
    """var (bool; 1/0 floats with NaN; True/False/None/NaN objects; int8 0/1 read from a file)
    as to_xarray's boolean: bool when every cell is known, else float64 1.0/0.0/NaN stored as
    int8 with _FillValue -1; the CF flag attributes either way."""
    v = np.asarray(var.values)
    if v.dtype == object:
        v = np.array([np.nan if x is None or x != x else float(x) for x in v.ravel()],
                     dtype=np.float64).reshape(v.shape)
    f = v.astype(np.float64)
    attrs = {k: a for k, a in var.attrs.items()
             if k not in ("_FillValue", "missing_value", "dtype")}
    attrs.update(flag_values=BOOL_FLAG_VALUES.copy(), flag_meanings=BOOL_FLAG_MEANINGS)
    if np.isnan(f).any():
        return xr.Variable(var.dims, f, attrs, {"dtype": "int8", "_FillValue": BOOL_FILL})
    # xarray's own coder stores a bool as int8 (and an attribute dtype = "bool")
    return xr.Variable(var.dims, f.astype(bool), attrs)


def _replace_variables(ds, new):
    """ds with its variables (data variables or coordinates) replaced by those of new (name ->
    xarray.Variable), encodings included; one update, not one per variable."""
    coords = {n: v for n, v in new.items() if n in ds.coords}
    if coords:
        ds = ds.assign_coords(coords)
    data = {n: v for n, v in new.items() if n not in ds.coords}
    if data:
        ds = ds.assign(data)
    for n, v in new.items():
        ds.variables[n].encoding = dict(v.encoding)
    return ds


def _is_boolean(var):
    fv = np.ravel(var.attrs.get("flag_values", []))
    return (var.attrs.get("flag_meanings") == BOOL_FLAG_MEANINGS and len(fv) == 2 and
            int(fv[0]) == 0 and int(fv[1]) == 1)


def netcdf_engines() -> list[str]:
    """The netCDF engines of xarray that this Python can use, in NETCDF_ENGINES order
    ("netcdf4", "h5netcdf", "scipy")."""
    import importlib
    out = []
    for engine, module, _ in NETCDF_ENGINES:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        out.append(engine)
    return out


def from_netcdf(path: str | os.PathLike, engine: str | None = None) -> xarray.Dataset:
    """The Dataset of a netCDF file that to_xarray(...).to_netcdf(path) wrote, as to_xarray
    made it, loaded into memory (the file closed): booleans (the variables whose attributes
    are flag_values = [0, 1], flag_meanings = "false true") as bool where every cell is known,
    else float64 1.0/0.0/NaN; labels (attribute missing_label) with NaN for their stored "".
    What the file format cannot hold stays converted: a netCDF 3 file (scipy's, or
    format="NETCDF3_*") has int64 variables as int32. engine: xarray's ("netcdf4",
    "h5netcdf", "scipy"; default: xarray's choice for the file). Raises what
    xarray.load_dataset raises (FileNotFoundError, ValueError: no engine reads it),
    ImportError without xarray."""
    xr = _xarray()
    ds = xr.load_dataset(path, engine=engine)
    new = {}
    for name, var in ds.variables.items():
        if _is_boolean(var):
            new[name] = _boolean_variable(xr, var)
        elif var.attrs.get("missing_label") == "":
            v = np.asarray(var.values)
            if v.dtype.kind == "f":  # every cell missing: xarray stored NaN as a float
                lab = np.full(v.shape, np.nan, dtype=object)
            else:
                lab = v.astype(object)
                lab[lab == ""] = np.nan
            new[name] = xr.Variable(var.dims, lab, var.attrs)
    return _replace_variables(ds, new)


def load_bulk(path: str, trial: int, xarray: bool = True) -> Dict[str, Any]:
    """The bulk data of one trial (docs/results.md, /bulk) as far as the file stores it:
    {'initial_tokens': (n, d), 'final_tokens': (n, d), 'final_attention': (n, n), 'V': (d, d),
    'M': (d, d), 'snapshots': (s, n, d)} numpy arrays; with xarray (default, when installed)
    'snapshots' is an xarray.DataArray with dimensions (time, token, dim) and the snapshot
    times as the `time` coordinate (/bulk/snapshots@times, else the stored spec), and
    'trajectory' the same from t = 0 (the initial tokens) to the snapshots, when both are
    stored. A trial that has not run, or a file without bulk data, gives {}. Raises
    schema.SchemaError for a trial outside the file."""
    with schema.open_results(path) as rf:
        out: Dict[str, Any] = dict(rf.load_bulk(trial))
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
