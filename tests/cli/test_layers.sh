#!/usr/bin/env bash
# Layers point one way: cli -> par -> io -> core. The core includes no MPI, HDF5 or YAML and
# opens no files; io includes no par or cli header; par no cli header. Checked on the sources.
set -u
src=${AS_SOURCE_DIR:?}
cd "$src" || exit 1
fail=0
bad() { echo "FAIL: $1"; fail=1; }

core_headers="status enums trial record rng triple tokens spectral pipeline classify hull dynamics attention expm"
io_headers="iocheck versions results journal spec sha256 matfile repair outset cost"
par_headers="par sched signals sweep pspectral"

for f in src/core/*.c src/core/*.h; do
  grep -Eq '#include *<(mpi|hdf5|yaml)\.h>' "$f" && bad "$f includes MPI, HDF5 or YAML"
  grep -Eq '\b(fopen|fwrite|fread|open|creat|unlink|rename)\(' "$f" && bad "$f does file I/O"
  for h in $io_headers $par_headers; do
    grep -q "#include \"attnsweep/$h.h\"" "$f" && bad "$f (core) includes attnsweep/$h.h"
  done
done
for h in $core_headers; do
  grep -Eq '#include *<(mpi|hdf5|yaml)\.h>' "include/attnsweep/$h.h" &&
    bad "include/attnsweep/$h.h (core) includes MPI, HDF5 or YAML"
done
for f in src/io/*.c src/io/*.h; do
  for h in $par_headers; do
    grep -q "#include \"attnsweep/$h.h\"" "$f" && bad "$f (io) includes attnsweep/$h.h"
  done
  grep -q '#include "cli.h"' "$f" && bad "$f (io) includes cli.h"
done
for f in src/par/*.c; do
  grep -q '#include "cli.h"' "$f" && bad "$f (par) includes cli.h"
done
# The analysis reads results through the documented schema only: no link to the core.
grep -lq "attnsweep_core\|ctypes" analysis/*.py analysis/attnsweep/*.py 2>/dev/null && bad "analysis/ loads the core"
[ $fail -eq 0 ] && echo "ok: layers cli -> par -> io -> core hold"
exit $fail
