"""Tables written as files that are not text: the tidy csv's table as netCDF (through xarray
and whichever netCDF library this Python has) or Parquet (pandas: pyarrow or fastparquet)."""

from __future__ import annotations

import os
from typing import List, Sequence

from . import schema
from .render import Table, render

#: the formats write_table_file writes (-o FILE.nc, FILE.parquet)
BINARY_FORMATS = ("parquet", "netcdf")


def write_table_file(tables: Sequence[Table], fmt: str, pre: List[str], path: str) -> None:
    """The csv of the tables (one table: the tidy csv) as a pandas frame, written as Parquet
    (pandas' to_parquet: needs pyarrow or fastparquet) or netCDF (xarray, one dimension `row`;
    netCDF 4 with python3-netcdf4, else netCDF 3 through python3-scipy, else netCDF 4 through
    python3-h5netcdf: xarray's own default never takes h5netcdf). Strings stay strings, empty
    cells of a text column become "", numbers keep NaN."""
    import io

    import pandas as pd
    df = pd.read_csv(io.StringIO(render(tables, "csv", pre)))
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].fillna("").astype(str)
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        if fmt == "parquet":
            try:
                df.to_parquet(tmp)
            except ImportError as e:
                raise schema.FileAccessError(
                    "cannot write %s: Parquet needs pyarrow or fastparquet (%s), which Debian 12 "
                    "does not package; write -o FILE.csv (or .nc) and convert it where pyarrow "
                    "is installed" % (path, str(e).split("\n")[0]))
        else:
            from .frame import netcdf_engines
            engines = netcdf_engines()
            engine = next((e for e in ("netcdf4", "scipy", "h5netcdf") if e in engines), None)
            if engine is None:
                raise schema.FileAccessError(
                    "cannot write %s: netCDF needs python3-netcdf4, python3-scipy or "
                    "python3-h5netcdf (apt-get install python3-netcdf4); or write -o FILE.csv"
                    % path)
            ds = df.rename_axis("row").to_xarray()
            ds.to_netcdf(tmp, engine=engine)
        os.replace(tmp, path)
    except OSError as e:
        raise schema.FileAccessError("cannot write %s: %s" % (path, e))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


