#!/usr/bin/env bash
# Issue 49, the readers' items: every command that reads a results file, its side files, a
# shard, a spec or a matrix file ends at once, exit 2, on a FIFO, a device or a directory where
# a file is expected (refused by type before it is opened); the checksum gate of summarize and
# report never passes a file it cannot open; `status --json` always prints exactly one JSON
# object, valid UTF-8; a compressed /trials is refused before any write; and three messages.
#   5   summarize and report of a file with a damaged row that this build's reader does not
#       open (a 2 MiB h5jam user block, /segments deleted, schema_version rewritten as a
#       string): exit 3 naming the trial (before: exit 0, the damaged row summarized); the
#       gate's table of each script's options is the script's own parser
#   10  a FIFO, directory or device at the results path (status, status --json, summarize,
#       report, reproduce, merge, repair, run --resume), at OUT.h5.lock, OUT.h5.spec or a
#       journal (status, resume with and without SPEC, repair), as a shard, a spec, a matrix
#       file or a checkpoint: exit 2 naming it within seconds, nothing written (before: status,
#       summarize, report, reproduce and merge waited until killed)
#       (and a fault met on the way: /bulk/<kind>_offset longer than the rows: status crashed)
#   13  status --json of a missing, non-HDF5, truncated file, a FIFO, a name and an attribute
#       that are not UTF-8, a shard set with such a name: one JSON object, valid UTF-8, with
#       "error" and "exit" when the file cannot be read (before: nothing on stdout, raw bytes)
#   12  resume (1 and 2 ranks, with and without SPEC) and repair of a file whose /trials or
#       /checksums/trials h5repack compressed: exit 2 naming the file, the dataset and the
#       remedy, the file byte-identical (before: exit 3 blaming a full disk, with rows written
#       without their checksums); after `h5repack -f NONE` the resume equals a reference run
#   15  repair of a truncated complete file: exit 2 without the advice to run repair; an
#       attribute rewritten as a variable-length string: the message names the file (resume,
#       merge), and end_time of that type no longer fails the close of a resume (exit 3 after
#       the whole run); merge of a shard set where one name is a link to another shard says
#       what that file holds instead of calling it missing
# Every command runs under `timeout`: a hang fails the test.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_test_init readers
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T="timeout -k 2 20"
cd "$tmp" || exit 1

# expect CODE PATTERN DESCRIPTION CMD...: CMD exits CODE (124: a hang) and its stderr matches
# PATTERN (grep -E).
expect() {
  local code=$1 pat=$2 what=$3
  shift 3
  local err rc
  err=$($T "$@" 2>&1 >/dev/null </dev/null); rc=$?
  check "$what: exit $code ($rc) ${err:0:160}" \
    bash -c '[ "$1" -eq "$2" ] && grep -Eq -- "$3" <<<"$4"' _ "$rc" "$code" "$pat" "$err"
}

cat >s.yaml <<'EOF'
name: readers
seed: 5
replicates: 4
sweep: {case: id, vfamily: identity, mfamily: identity, d: 2, n: 6, T: 1, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
slow_spec readers 7 >slow.yaml
$T "$bin" run s.yaml -o r.h5 -q || echo "FAIL: reference run"
$T "$bin" run slow.yaml -o ref.h5 -q || echo "FAIL: slow reference run"
"$mpiexec" -n 1 "$bin" run slow.yaml -o st.h5 -q --time-limit 0.05 >/dev/null 2>&1
check "a stopped file with its side files" bash -c 'test -e st.h5.lock -a -e st.h5.spec -a -e st.h5.journal.0'
# copy_set SRC DST: a results file with its side files under another name
copy_set() {
  local f
  rm -rf "$2" "$2".*
  cp "$1" "$2"
  for f in "$1".*; do [ -e "$f" ] && cp "$f" "$2${f#"$1"}"; done
}

# ------------------------------------------------------------------ 5: the checksum gate
cat >flip.py <<'EOF'
import shutil, sys, h5py
src, dst, how = sys.argv[1:4]
shutil.copy(src, dst)
with h5py.File(dst, "r") as f:
    ds = f["trials"]
    off = ds.id.get_offset() + 1 * ds.dtype.itemsize + 40  # row 1, a byte of a float
with open(dst, "r+b") as fh:
    fh.seek(off)
    b = fh.read(1)
    fh.seek(off)
    fh.write(bytes([b[0] ^ 0x55]))
if how == "segments":
    with h5py.File(dst, "r+") as f:
        del f["segments"]
elif how == "schema":
    with h5py.File(dst, "r+") as f:
        del f.attrs["schema_version"]
        f.attrs.create("schema_version", "4", dtype=h5py.string_dtype())
elif how == "nosums":  # an older file: no checksums, nothing to verify
    with h5py.File(dst, "r+") as f:
        del f["checksums"]
EOF
"$py" flip.py r.h5 d.h5 plain
head -c 2097152 /dev/zero | tr '\0' u >ub.txt
h5jam -i d.h5 -u ub.txt -o jam.h5 >/dev/null 2>&1
check "h5jam: a 2 MiB user block" bash -c 'h5dump -B jam.h5 | grep -q "USERBLOCK_SIZE 2097152"'
"$py" flip.py r.h5 noseg.h5 segments
"$py" flip.py r.h5 schema.h5 schema
dmg='fail their checksums: refusing to use damaged results'
for f in d.h5 jam.h5 noseg.h5 schema.h5; do
  expect 3 "$f: 1 damaged row\(s\) \(trial 1\) $dmg" "summarize $f (damaged row 1)" "$bin" summarize "$f"
  expect 3 "$f: 1 damaged row\(s\) \(trial 1\) $dmg" "report $f (damaged row 1)" "$bin" report "$f" -o "$f.html"
  check "report $f: no page" test ! -e "$f.html"
done
expect 3 "jam.h5: 1 damaged row" "summarize: a valued option first (--width page)" "$bin" summarize --width page jam.h5
expect 3 "noseg.h5: 1 damaged row" "summarize: the second of two files" "$bin" summarize r.h5 noseg.h5 --by d
expect 3 "schema.h5: 1 damaged row" "report: the second of two files" "$bin" report r.h5 schema.h5 -o two.html
out=$($T "$bin" status jam.h5 2>&1); rc=$?
check "status reads a file behind a 2 MiB user block and finds the damage ($rc)" \
  bash -c '[ "$1" -eq 3 ] && grep -q "trial 1: row damaged" <<<"$2"' _ "$rc" "$out"
# /bulk/<kind>_offset longer than the rows + 1: read past the end of its array (SIGSEGV).
cat >bulk.yaml <<'EOF'
name: bulk
seed: 3
replicates: 3
output: {final: true}
sweep: {case: id, vfamily: identity, mfamily: identity, d: 2, n: 6, T: 1, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
$T "$bin" run bulk.yaml -o bulk.h5 -q || echo "FAIL: bulk run"
"$py" -c "
import h5py, numpy as np
with h5py.File('bulk.h5', 'r+') as f:
    o = f['bulk/final_tokens_offset'][:]
    del f['bulk/final_tokens_offset']
    f['bulk/final_tokens_offset'] = np.concatenate([o, o[-1] + np.arange(100000, dtype=np.uint64)])
"
pat='bulk.h5: /bulk/final_tokens_offset (has 100004 entries for 3 rows|is damaged)'
expect 2 "$pat" "status of a file whose offsets are longer than its rows" "$bin" status bulk.h5
expect 2 "$pat" "summarize of that file" "$bin" summarize bulk.h5
"$py" flip.py r.h5 old.h5 nosums
expect 0 "" "summarize of a file without checksums (older): passed on, unverified" "$bin" summarize old.h5
expect 0 "" "summarize of an intact file: exit 0" "$bin" summarize r.h5 --by d --format csv
# The gate's tables (cmd_summarize.c, cmd_report.c) are the scripts' own argparse options.
cat >opts.py <<'EOF'
import argparse, importlib, re, sys
src, script, cfile, table = sys.argv[1:5]
sys.path.insert(0, src + "/analysis")
got = {}
def capture(self, args=None, namespace=None):
    got["p"] = self
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = capture
importlib.import_module(script).main([])
want = set()
for a in got["p"]._actions:
    longs = [s[2:] for s in a.option_strings if s.startswith("--")]
    shorts = [s[1] for s in a.option_strings if not s.startswith("--")]
    if not longs:
        continue
    n = {0: "0", None: "1", "?": "?", "+": "+"}.get(a.nargs, "1")
    if isinstance(a, argparse._HelpAction):
        n = "h"
    want.add((longs[0], shorts[0] if shorts else "0", n))
text = open(cfile).read()
body = re.search(r"%s\[\] = \{(.*?)\};" % table, text, re.S).group(1)
have = set()
for name, short, n in re.findall(r"\{\"([a-z0-9-]+)\", ('.'|0), ('.'|\d)\}", body):
    have.add((name, short.strip("'"), n.strip("'")))
print("script:", sorted(want - have), "table:", sorted(have - want))
sys.exit(0 if want == have else 1)
EOF
check "summarize's gate table is attnsweep_summarize.py's parser" \
  "$py" opts.py "$src" attnsweep_summarize "$src/src/cli/cmd_summarize.c" summarize_opts
check "report's gate table is attnsweep_report.py's parser" \
  "$py" opts.py "$src" attnsweep_report "$src/src/cli/cmd_report.c" report_opts

# ------------------------------------------------------------------ 10: FIFOs, devices, dirs
mkfifo fifo.h5
mkdir dir.h5
for p in fifo.h5 dir.h5 /dev/null; do
  case $p in
    fifo.h5) kind='a FIFO \(named pipe\)' ;;
    dir.h5) kind='a directory' ;;
    *) kind='a character device' ;;
  esac
  pat="$p is $kind, not a regular file"
  expect 2 "$pat" "status $p" "$bin" status "$p"
  expect 2 "$pat" "status --json $p" "$bin" status --json "$p"
  expect 2 "$pat" "summarize $p" "$bin" summarize "$p"
  expect 2 "$pat" "report $p" "$bin" report "$p" -o x.html
  expect 2 "$pat" "reproduce $p" "$bin" reproduce "$p" 0
  expect 2 "$pat" "merge with the shard $p" "$bin" merge m.h5 r.h5 "$p"
  expect 2 "not a regular file" "repair $p" "$bin" repair "$p"
  expect 2 "not a regular file" "run --resume onto $p" "$bin" run s.yaml -o "$p" --resume -q
done
check "merge made nothing" test ! -e m.h5
# Side files of a stopped run: the lock, the spec copy, a journal.
for side in lock spec journal.0; do
  copy_set st.h5 t.h5
  rm -f "t.h5.$side"
  mkfifo "t.h5.$side"
  md5sum t.h5 >t.md5
  case $side in
    lock) role='the lock file' ;;
    spec) role='the spec copy' ;;
    *) role='the journal' ;;
  esac
  pat="$role (\./)?t\.h5\.$side is a FIFO \(named pipe\), not a regular file: refusing to open it"
  expect 2 "$pat" "spec-less resume, FIFO at t.h5.$side" "$bin" run -o t.h5 --resume -q
  if [ "$side" = lock ]; then
    expect 2 "$pat" "status, FIFO at t.h5.lock" "$bin" status t.h5
    expect 2 "$pat" "status --json, FIFO at t.h5.lock" "$bin" status --json t.h5
    expect 2 "$pat" "resume with SPEC, FIFO at t.h5.lock" "$bin" run slow.yaml -o t.h5 --resume -q
  else
    expect 0 "" "status, FIFO at t.h5.$side: the file itself is read" "$bin" status t.h5
  fi
  [ "$side" = journal.0 ] &&
    expect 2 "$pat" "resume with SPEC, FIFO at t.h5.journal.0" "$bin" run slow.yaml -o t.h5 --resume -q
  expect 2 "$pat" "repair, FIFO at t.h5.$side" "$bin" repair t.h5
  [ "$side" = spec ] &&
    expect 2 "$pat" "resume with SPEC, FIFO at t.h5.spec" "$bin" run slow.yaml -o t.h5 --resume -q
  check "FIFO at t.h5.$side: the results untouched" md5sum -c --quiet t.md5
done
# An unreadable (truncated) file whose spec copy is a FIFO: repair refuses the copy.
copy_set st.h5 tr.h5
truncate -s 4000 tr.h5
rm -f tr.h5.spec
mkfifo tr.h5.spec
expect 2 'the spec copy tr.h5.spec is a FIFO' "repair of a truncated file, FIFO at tr.h5.spec" "$bin" repair tr.h5
# A shard set where one shard is a FIFO.
mkdir shards
(
  cd shards || exit 1
  for i in 1 2; do $T "$bin" run ../s.yaml -o m.h5 --shard $i/2 -q; done
  mkfifo m.h5.shard-1-of-3
)
out=$($T "$bin" status shards/m.h5.shard-1-of-3 shards/m.h5.shard-1-of-2 2>&1); rc=$?
check "status of a shard set with a FIFO: exit 2, the shard named unreadable ($rc)" \
  bash -c '[ "$1" -eq 2 ] && grep -q "shards/m.h5.shard-1-of-3: unreadable: shards/m.h5.shard-1-of-3 is a FIFO" <<<"$2"' _ "$rc" "$out"
# Spec, matrix file, checkpoint.
mkfifo spec.fifo
expect 2 'spec.fifo: cannot read the spec: it is a FIFO' "validate of a named FIFO" "$bin" validate spec.fifo
expect 2 'spec.fifo: cannot read the spec: it is a FIFO' "plan of a named FIFO" "$bin" plan spec.fifo
mkfifo mat.h5
cat >mat.yaml <<'EOF'
name: mat
seed: 1
sweep: {vfamily: file, mfamily: file, file: mat.h5, d: 2, n: 6, T: 1, dt: 0.1,
        init: {kind: box, scale: 1}}
EOF
expect 2 'mat.h5 is a FIFO \(named pipe\), not a regular file' "validate, a FIFO as matrix file" "$bin" validate mat.yaml
expect 4 '' "run, a FIFO as matrix file: the trial fails, the run ends" "$bin" run mat.yaml -o mat_out.h5 -q
check "run, a FIFO as matrix file: the row's message names it" bash -c \
  "'$py' -c \"import h5py; print(h5py.File('mat_out.h5','r')['trials']['message'][0].decode())\" | grep -q 'mat.h5 is a FIFO'"
mkfifo ckpt.safetensors
expect 2 'ckpt.safetensors is not a regular file' "import-weights of a FIFO" "$bin" import-weights ckpt.safetensors -o w.h5

# ------------------------------------------------------------------ 13: status --json
cp r.h5 "$(printf 'n\377m\351.h5')"
cp r.h5 attr.h5
"$py" -c "
import h5py, numpy as np
with h5py.File('attr.h5', 'r+') as f:
    n = np.array(b'spec \xff\xfe caf\xc3\xa9', dtype='S16')
    del f.attrs['spec_name']
    f.attrs['spec_name'] = n
"
head -c 4000 r.h5 >trunc.h5
echo "not hdf5" >text.h5
cat >onejson.py <<'EOF'
import json, os, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # strict: valid UTF-8 only
assert text.endswith("\n") and text.count("\n") == 1, "not one line"
obj = json.loads(text)
assert isinstance(obj, dict), "not an object"
rc = int(sys.argv[2])
if sys.argv[3] == "error":
    assert "error" in obj and obj["exit"] == rc and obj["state"] == "error", obj
else:
    assert "error" not in obj and obj["exit"] == rc, obj
if len(sys.argv) > 4:
    assert os.fsencode(obj[sys.argv[4]]) == os.fsencode(sys.argv[5]), (obj[sys.argv[4]], sys.argv[5])
EOF
json() { # json FILE CODE error|ok [MEMBER VALUE]: status --json FILE, one valid object
  local rc
  $T "$bin" status --json "$1" >j.out 2>/dev/null; rc=$?
  check "status --json $(printf '%q' "$1"): exit $rc, one JSON object ($3)" \
    bash -c '[ "$1" -eq "$2" ] && "$3" onejson.py j.out "$2" "${@:4}"' _ "$rc" "$2" "$py" "$3" "${@:4}"
}
json none.h5 2 error
json text.h5 2 error
json trunc.h5 3 error
json fifo.h5 2 error
json dir.h5 2 error
json r.h5 0 ok
json "$(printf 'n\377m\351.h5')" 0 ok file "$(printf 'n\377m\351.h5')"
json attr.h5 0 ok spec_name "$(printf 'spec \377\376 caf\303\251')"
$T "$bin" status --json >j.out 2>/dev/null; rc=$?
check "status --json without a file: one object with error, exit 2 ($rc)" \
  bash -c '[ "$1" -eq 2 ] && "$2" onejson.py j.out 2 error' _ "$rc" "$py"
cp r.h5 "$(printf 'shards/m.h5.shard-\377')"
$T "$bin" status --json shards/m.h5.shard-1-of-2 "$(printf 'shards/m.h5.shard-\377')" >j.out 2>/dev/null; rc=$?
check "status --json of a shard set with a non-UTF-8 name: one valid object ($rc)" \
  "$py" -c "import json; json.loads(open('j.out','rb').read().decode('utf-8'))"
rm -f "$(printf 'shards/m.h5.shard-\377')"

# ------------------------------------------------------------------ 12: a compressed /trials
if command -v h5repack >/dev/null; then
  for d in trials checksums/trials; do
    rm -rf g.h5 g.h5.*
    copy_set st.h5 g0.h5
    h5repack -f "/$d:GZIP=6" g0.h5 g.h5
    for f in g0.h5.*; do cp "$f" "g.h5${f#g0.h5}"; done
    md5sum g.h5 >g.md5
    pat="g.h5: /$d is stored with a filter \(deflate.*nothing was written.*h5repack -f NONE g.h5"
    expect 2 "$pat" "resume of a file whose /$d is compressed" "$bin" run slow.yaml -o g.h5 --resume -q
    expect 2 "$pat" "spec-less resume, /$d compressed" "$bin" run -o g.h5 --resume -q
    expect 2 "$pat" "resume on 2 ranks, /$d compressed" "$mpiexec" -n 2 "$bin" run slow.yaml -o g.h5 --resume -q
    expect 2 "$pat" "repair, /$d compressed" "$bin" repair g.h5
    check "/$d compressed: the file byte-identical" md5sum -c --quiet g.md5
    h5repack -f NONE g.h5 plain.h5 && mv plain.h5 g.h5
    expect 0 "" "after h5repack -f NONE (/$d): the resume completes" "$bin" run slow.yaml -o g.h5 --resume -q
    check "after h5repack -f NONE (/$d): equal to the reference" "$py" "$tools/compare_results.py" ref.h5 g.h5 --require-complete
  done
else
  skip "compressed /trials" "h5repack (hdf5-tools) is not installed"
fi

# ------------------------------------------------------------------ 15: three messages
head -c 5000 r.h5 >tc.h5
md5sum tc.h5 >tc.md5
err=$($T "$bin" repair tc.h5 2>&1); rc=$?
check "repair of a truncated complete file: exit 2 naming it and HDF5's cause ($rc)" \
  bash -c '[ "$1" -eq 2 ] && grep -q "refusing to repair tc.h5: tc.h5 cannot be opened: HDF5 says \"truncated file" <<<"$2"' _ "$rc" "$err"
check "... without the advice to run repair, with a way out" \
  bash -c '! grep -q "attnsweep repair tc.h5" <<<"$1" && grep -q "restore the file from a copy" <<<"$1"' _ "$err"
check "... the file untouched" md5sum -c --quiet tc.md5
vlen() { # vlen FILE ATTR: the root attribute ATTR rewritten as a variable-length string
  "$py" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    v = f.attrs[sys.argv[2]]
    v = v.decode() if isinstance(v, bytes) else str(v)
    del f.attrs[sys.argv[2]]
    f.attrs.create(sys.argv[2], v, dtype=h5py.string_dtype())
" "$1" "$2"
}
copy_set st.h5 va.h5
vlen va.h5 spec_sha256
pat='va.h5: attribute spec_sha256 is a variable-length string, not the fixed-length string'
expect 2 "$pat" "resume, spec_sha256 a variable-length string: names the file" "$bin" run -o va.h5 --resume -q
expect 2 "$pat" "merge, spec_sha256 a variable-length string: names the file" "$bin" merge vm.h5 va.h5
copy_set st.h5 ve.h5
vlen ve.h5 end_time
expect 0 "" "resume, end_time a variable-length string: completes (it is rewritten)" "$bin" run -o ve.h5 --resume -q
check "... equal to the reference" "$py" "$tools/compare_results.py" ref.h5 ve.h5 --require-complete
(
  cd shards || exit 1
  mv m.h5.shard-2-of-2 real2.h5
  ln -s m.h5.shard-1-of-2 m.h5.shard-2-of-2
)
expect 2 'missing shard: shards/m.h5.shard-2-of-2 \(that file exists, but it holds shard 1 of 2 by its own attributes' \
  "merge, a shard name that links to another shard: says what it holds" \
  "$bin" merge mm.h5 shards/m.h5.shard-1-of-2 shards/m.h5.shard-2-of-2
exit $fail
