#!/usr/bin/env bash
# `attnsweep census`: on a matrix file whose triples have properties known by construction
# (V = I, a Perron V, a complex leading pair, V = -I, a paranormal V, a negative margin, an
# asymmetric M), every hypothesis column and theorem is the constructed one and every number
# matches numpy; the ScaLAPACK path (mpiexec -n 2, --threshold) agrees with LAPACK; bad files
# exit 2 naming the dataset; and end to end: a checkpoint -> import-weights -> census -> a sweep
# over the imported heads (jobs/examples/imported_heads.sh), whose records carry the census's
# analysis, and from_file.yaml's two-command recipe at small size.
set -u
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=lib.sh
. "$src/tests/cli/lib.sh"
as_test_init census
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1

# ---------------------------------------------------------------- the known triples
"$py" - "$tmp/known.h5" <<'PY' || { echo "FAIL: writing known.h5"; exit 1; }
import sys, h5py, numpy as np
d, rng = 6, np.random.default_rng(7)
I = np.eye(d)
S = I + 0.3 * rng.standard_normal((d, d))            # an oblique basis (well conditioned)
Si = np.linalg.inv(S)
perron = rng.random((d, d)) + 0.1                    # positive entries: Perron-Frobenius
rot = np.zeros((d, d))
rot[:2, :2] = [[1.5, -2.0], [2.0, 1.5]]              # leading pair 1.5 +- 2i, max real part
rot[2:, 2:] = np.diag([1.0, 0.5, -0.3, 0.2])
A = rng.standard_normal((d, d)); A = 0.4 * (A - A.T)  # skew: x^T A x = 0
V = [I, perron, S @ rot @ Si, -I, S @ np.diag([2, 2, 2, 0.5, -1, 0.3]) @ Si, perron,
     rng.random((d, d)) + 0.1]
K = [I, I, I, I, I, -I, I + A]
with h5py.File(sys.argv[1], "w") as f:
    g = f.create_group("triples")
    g["V"] = np.array(V)
    g["Q"] = np.array([I] * len(V))
    g["K"] = np.array(K)
    g["layer"] = np.array([0, 0, 0, 0, 1, 1, 1], dtype=np.int32)
    g["head"] = np.array([0, 1, 2, 3, 0, 1, 2], dtype=np.int32)
    g.attrs["mscale"] = 0.5
    g.attrs["model"] = np.bytes_(b"known")  # fixed-length: what census reads
PY

out=$("$bin" census "$tmp/known.h5" 2>&1); rc=$?
echo "$out"
check "census exits 0" test $rc -eq 0
check "header names the file, d, Q and K shape, model and path" \
  grep -q "census of $tmp/known.h5: 7 triples, d = 6, Q and K 6 x 6, model known; tol 1e-10; LAPACK" <<<"$out"
check "one rank: LAPACK (the cheaper path)" grep -q "LAPACK, one triple per rank" <<<"$out"
check "summary line" grep -qx "good triples: 2 of 7 heads" <<<"$out"
check "theorem counts" grep -qx "theorems: identity 1, good 2, paranormal 1, minus_identity 1, codim_k 1, complex 1" <<<"$out"
"$bin" census "$tmp/known.h5" -o "$tmp/known.md" >"$tmp/o.txt" 2>&1
check "-o FILE holds what stdout shows, nothing on stdout" \
  bash -c "[ ! -s '$tmp/o.txt' ] && diff <(printf '%s\n' \"\$1\") '$tmp/known.md' >/dev/null" _ "$out"
"$bin" census "$tmp/known.h5" --csv >"$tmp/known.csv" 2>"$tmp/csv.err"
check "csv: exit 0, summary on stderr" grep -qx "good triples: 2 of 7 heads" "$tmp/csv.err"

# Columns and numbers against the construction and numpy (eigenvalues, eigenvectors, margins).
"$py" - "$tmp/known.h5" "$tmp/known.md" "$tmp/known.csv" <<'PY'
import csv, sys, h5py, numpy as np
fail = 0
def expect(cond, what):
    global fail
    if not cond:
        print("FAIL:", what); fail = 1
# Known by construction: (real, positive, simple, dominant, paranormal, good, theorem)
known = [("yes", "yes", "no", "no", "yes (dim F 6)", "no", "identity"),
         ("yes", "yes", "yes", "yes", "yes (dim F 1)", "yes", "good"),
         ("no", "no", "yes", "no", "no", "no", "complex"),
         ("yes", "no", "no", "no", "no", "no", "minus_identity"),
         ("yes", "yes", "no", "no", "yes (dim F 3)", "no", "paranormal"),
         ("yes", "yes", "yes", "yes", "yes (dim F 1)", "no", "codim_k"),
         ("yes", "yes", "yes", "yes", "yes (dim F 1)", "yes", "good")]
with h5py.File(sys.argv[1], "r") as f:
    V, Q, K = f["triples/V"][...], f["triples/Q"][...], f["triples/K"][...]
    lay, head = f["triples/layer"][...], f["triples/head"][...]
rows = [l for l in open(sys.argv[2]) if l.startswith("| ") and not l.startswith("| layer")]
expect(len(rows) == 7, "7 table rows, got %d" % len(rows))
cols = [c.strip() for c in open(sys.argv[2]).read().split("\n")[2].strip("|").split("|")]
recs = list(csv.DictReader(open(sys.argv[3])))
expect(len(recs) == 7, "7 csv rows")
for t, (row, rec) in enumerate(zip(rows, recs)):
    c = dict(zip(cols, [x.strip() for x in row.strip().strip("|").split("|")]))
    M = 0.5 * Q[t].T @ K[t]
    w, vr = np.linalg.eig(V[t])
    o = sorted(range(6), key=lambda i: (-abs(w[i]), -w[i].real, -w[i].imag))
    l1, l2 = w[o[0]], abs(w[o[1]])
    exp = known[t]
    got = (c["real"], c["positive"], c["simple"], c["dominant"], c["paranormal"], c["good"],
           c["theorem"])
    expect(got == exp, "triple %d: columns %s, constructed %s" % (t, got, exp))
    expect((c["layer"], c["head"]) == (str(lay[t]), str(head[t])), "triple %d: labels" % t)
    kpos = int(sum(x.real > 1e-10 * abs(l1) for x in w))
    expect(int(c["k+"]) == kpos == int(rec["kpos"]), "triple %d: k+ %s, numpy %d" % (t, c["k+"], kpos))
    # markdown: 4 significant digits; csv: full precision
    expect(abs(float(c["abs lambda_2"]) - l2) <= 1e-3 * l2, "triple %d: |lambda_2|" % t)
    expect(abs(complex(float(rec["lambda1_re"]), float(rec["lambda1_im"])) - l1) <= 1e-12 * abs(l1)
           or abs(complex(float(rec["lambda1_re"]), -float(rec["lambda1_im"])) - l1) <= 1e-12 * abs(l1),
           "triple %d: lambda_1 %s%+si, numpy %s" % (t, rec["lambda1_re"], rec["lambda1_im"], l1))
    expect(abs(float(rec["lambda2_abs"]) - l2) <= 1e-12 * abs(l1), "triple %d: lambda2_abs" % t)
    expect(abs(float(rec["m_min_sym_eig"]) - np.linalg.eigvalsh((M + M.T) / 2)[0]) <= 1e-14,
           "triple %d: min eig sym(M)" % t)
    asym = np.linalg.norm(M - M.T) / np.linalg.norm(M)
    expect(abs(float(rec["m_asym"]) - asym) <= 1e-14 + 1e-12 * asym, "triple %d: asym(M)" % t)
    expect(abs(float(c["asym(M)"]) - asym) <= 1e-3 * asym + 1e-14, "triple %d: md asym" % t)
    if c["simple"] == "yes" and c["real"] == "yes":
        phi = vr[:, o[0]].real
        phi /= np.linalg.norm(phi)
        m = phi @ M @ phi
        expect(abs(float(rec["margin"]) - m) <= 1e-10, "triple %d: margin %s, numpy %g"
               % (t, rec["margin"], m))
        expect(abs(float(c["<Q phi_1, K phi_1>"]) - m) <= 1e-3 * abs(m), "triple %d: md margin" % t)
        gap = (l1.real - l2) / abs(l1)
        expect(abs(float(rec["gap_rel"]) - gap) <= 1e-10, "triple %d: gap_rel" % t)
    else:
        expect(c["<Q phi_1, K phi_1>"] == "-" and rec["margin"] == "nan",
               "triple %d: margin undefined without a real simple lambda_1" % t)
    expect(rec["status"] == "ok" and rec["distributed"] == "0", "triple %d: status" % t)
# The constructed margins: 0.5 |phi|^2 = 0.5 (M = I/2, and I/2 + skew), -0.5 for K = -I.
expect(abs(float(recs[1]["margin"]) - 0.5) < 1e-12, "Perron with M = I/2: margin 0.5")
expect(abs(float(recs[5]["margin"]) + 0.5) < 1e-12, "K = -I: margin -0.5")
expect(abs(float(recs[6]["margin"]) - 0.5) < 1e-12, "M = (I + skew)/2: margin 0.5")
expect(abs(float(recs[6]["m_min_sym_eig"]) - 0.5) < 1e-12, "M = (I + skew)/2: sym part I/2")
sys.exit(fail)
PY
check "census columns and numbers match the construction and numpy" test $? -eq 0

# The hypotheses line: counts by construction (Perron, K = -I and the good one have a real
# dominant lambda_1; M = I/2 in five, -I/2 in one, I/2 + skew in one), medians from the CSV.
"$py" - "$tmp/known.csv" "$tmp/csv.err" <<'PY'
import csv, math, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
line = [l for l in open(sys.argv[2]) if l.startswith("hypotheses:")]
fail = int(len(line) != 1)
m = re.match(r"hypotheses: real dominant lambda_1 (\d+), good (\d+), <Q phi_1, K phi_1> > 0 (\d+), "
             r"M symmetric (\d+), M positive definite (\d+) \(of (\d+) analysed\); median gap / "
             r"abs lambda_1 (\S+), median <Q phi_1, K phi_1> (\S+)$", line[0].strip() if line else "")
if not m:
    print("FAIL: hypotheses line %r" % line); sys.exit(1)
got = tuple(int(x) for x in m.groups()[:6])
if got != (3, 2, 2, 6, 5, 7):
    print("FAIL: hypotheses counts %s, constructed (3, 2, 2, 6, 5, 7)" % (got,)); fail = 1
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
gaps = [float(r["gap_rel"]) for r in rows if r["lead_real"] == "1"]
margins = [float(r["margin"]) for r in rows if r["margin"] != "nan"]
for what, want, text in (("gap", med(gaps), m.group(7)), ("margin", med(margins), m.group(8))):
    if abs(float(text) - want) > 1e-3 * abs(want) + 1e-12:
        print("FAIL: median %s %s, from the CSV %g" % (what, text, want)); fail = 1
sys.exit(fail)
PY
check "hypotheses line: counts as constructed, medians of the CSV's columns" test $? -eq 0

# ---------------------------------------------------------------- ScaLAPACK path = LAPACK path
"$py" - "$tmp/big.h5" <<'PY' || { echo "FAIL: writing big.h5"; exit 1; }
import sys, h5py, numpy as np
d, dk, rng = 96, 16, np.random.default_rng(3)
wv = rng.standard_normal((4, d, dk)) / np.sqrt(d)
wq = rng.standard_normal((4, d, dk)) / np.sqrt(d)
V = np.array([wv[0] @ wv[0].T + 0.01 * rng.standard_normal((d, d)) / np.sqrt(d),
              wv[1] @ rng.standard_normal((dk, d)) / np.sqrt(dk), rng.random((d, d)),
              -wv[3] @ wv[3].T])
with h5py.File(sys.argv[1], "w") as f:
    f["triples/V"] = V
    f["triples/Q"] = np.transpose(wq, (0, 2, 1))
    f["triples/K"] = np.transpose(wq + 0.1 * rng.standard_normal(wq.shape) / np.sqrt(d), (0, 2, 1))
    f["triples"].attrs["mscale"] = 0.25
PY
"$bin" census "$tmp/big.h5" --csv >"$tmp/lapack.csv" 2>/dev/null
check "LAPACK census of d = 96" test $? -eq 0
out=$("$mpiexec" -n 2 "$bin" census "$tmp/big.h5" --csv --threshold 64 -o "$tmp/scalapack.csv" 2>&1); rc=$?
check "ScaLAPACK census under mpiexec -n 2: exit 0 ($out)" test $rc -eq 0
"$py" - "$tmp/lapack.csv" "$tmp/scalapack.csv" <<'PY'
import csv, math, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
fail = int(len(a) != 4 or len(b) != 4)
exact = ["lead_real", "lead_positive", "lead_simple", "lead_dominant", "margin_positive", "good",
         "m_symmetric", "m_spd", "kpos", "paranormal", "dim_f", "complex_lead", "theorem",
         "predicted", "layer", "head", "status"]
close = ["lambda1_re", "lambda1_im", "lambda2_abs", "gap", "margin", "m_asym", "m_min_sym_eig",
         "mu"]
for x, y in zip(a, b):
    for k in exact:
        if x[k] != y[k]:
            print("FAIL: triple %s: %s %s (LAPACK) vs %s (ScaLAPACK)" % (x["index"], k, x[k], y[k])); fail = 1
    s = abs(float(x["lambda1_re"])) + abs(float(x["lambda1_im"]))
    for k in close:
        u, v = float(x[k]), float(y[k])
        if not (math.isnan(u) and math.isnan(v)) and not abs(u - v) <= 1e-9 * max(s, 1):
            print("FAIL: triple %s: %s %r vs %r" % (x["index"], k, u, v)); fail = 1
    if x["distributed"] != "0" or y["distributed"] != "1":
        print("FAIL: distributed column"); fail = 1
print("compared %d triples" % len(a))
sys.exit(fail)
PY
check "ScaLAPACK and LAPACK census agree (flags, theorem; numbers to 1e-9)" test $? -eq 0

# LAPACK on two ranks (one triple per rank): the same rows, in order.
"$mpiexec" -n 2 "$bin" census "$tmp/big.h5" --csv -o "$tmp/lapack2.csv" 2>/dev/null
check "LAPACK on 2 ranks: the rows of one rank, byte for byte" cmp "$tmp/lapack.csv" "$tmp/lapack2.csv"

# ---------------------------------------------------------------- stacked heads, positions
# A file with a head axis ([k][H][...], import-weights --stack-heads) gives each item's heads
# in turn: the rows of the same triples stored one per item, with head labels 0..H-1.
"$py" - "$tmp" <<'PY' || { echo "FAIL: writing stacked.h5"; exit 1; }
import sys, h5py, numpy as np
t = sys.argv[1]
with h5py.File(t + "/known.h5", "r") as f:
    V, Q, K = (f["triples"][n][:6] for n in "VQK")
with h5py.File(t + "/stacked.h5", "w") as f:
    g = f.create_group("triples")
    g["V"], g["Q"], g["K"] = (a.reshape((2, 3) + a.shape[1:]) for a in (V, Q, K))
    g["layer"] = np.array([4, 7], dtype=np.int32)
    g.attrs["mscale"] = 0.5
    g.attrs["position"] = np.bytes_(b"rotary")
    g["rotary_spread"] = np.array([[0.5, 0.1, 0.2], [0.9, 0.3, 0.4]])
    g.attrs["model"] = "vlen strings are not read"
PY
out=$("$bin" census "$tmp/stacked.h5" --csv 2>"$tmp/st.err"); rc=$?
check "stacked heads: exit 0" test $rc -eq 0
check "stacked heads: 6 rows with the per-triple analysis" \
  bash -c "diff <(cut -d, -f4- <<<\"\$0\") <(head -7 '$tmp/known.csv' | cut -d, -f4-)" "$out"
check "stacked heads: layer and head labels" \
  bash -c "[ \"\$(cut -d, -f2,3 <<<\"\$0\" | tail -6 | tr '\n' ' ')\" = '4,0 4,1 4,2 7,0 7,1 7,2 ' ]" "$out"
check "rotary positions are stated (position-free M)" grep -q "positions: rotary.*r = 0" "$tmp/st.err"
check "rotary spread: median and max of /triples/rotary_spread" \
  grep -q "^rotary: .* median 0.35, max 0.9; the rows above are r = 0$" "$tmp/st.err"
out=$("$bin" census "$tmp/stacked.h5" 2>&1)
check "a variable-length model label is not read" bash -c "! grep -q 'vlen' <<<\"\$0\"" "$out"

# ---------------------------------------------------------------- never a hang, crash or loss
cp "$tmp/known.h5" "$tmp/keep.h5"
err=$("$bin" census "$tmp/keep.h5" -o "$tmp/keep.h5" 2>&1); rc=$?
check "-o naming the input: exit 2 ($err)" bash -c "[ $rc -eq 2 ] && grep -q 'is the input' <<<\"\$0\"" "$err"
ln -s "$tmp/keep.h5" "$tmp/link.md"
err=$("$bin" census "$tmp/keep.h5" -o "$tmp/link.md" 2>&1); rc=$?
check "-o a link to the input: exit 2, the input intact" \
  bash -c "[ $rc -eq 2 ] && cmp -s '$tmp/known.h5' '$tmp/keep.h5'"
# A FIFO (or device, directory) is refused by its type before it is opened (issue 49): it
# used to wait in HDF5's open until --read-seconds.
mkfifo "$tmp/fifo.h5"
start=$SECONDS
err=$(timeout 60 "$bin" census "$tmp/fifo.h5" 2>&1); rc=$?
check "a FIFO: exit 2 at once, refused by type ($err)" \
  bash -c "[ $rc -eq 2 ] && [ $((SECONDS - start)) -lt 5 ] && grep -q 'fifo.h5 is a FIFO (named pipe), not a regular file' <<<\"\$0\"" "$err"
err=$(timeout 60 "$bin" census /dev/zero 2>&1); rc=$?
check "a device: exit 2, refused by type ($err)" \
  bash -c "[ $rc -eq 2 ] && grep -q '/dev/zero is a character device' <<<\"\$0\"" "$err"
# The read guard, with a read that never ends (the test hook ATTNSWEEP_TEST_CENSUS_STALL
# stands for a file whose read HDF5 never finishes).
cp "$tmp/known.h5" "$tmp/stall.h5"
start=$SECONDS
err=$(ATTNSWEEP_TEST_CENSUS_STALL=1 timeout 60 "$bin" census "$tmp/stall.h5" --read-seconds 1 2>&1); rc=$?
check "a read that never ends stops at --read-seconds: exit 2 ($err)" \
  bash -c "[ $rc -eq 2 ] && [ $((SECONDS - start)) -lt 30 ] && grep -q 'more than 1 s' <<<\"\$0\"" "$err"
ATTNSWEEP_TEST_CENSUS_STALL=1 "$bin" census "$tmp/stall.h5" 2>"$tmp/segv.err" &
pid=$!
for _ in $(seq 300); do  # until it waits inside the guarded read
  grep -q pause "/proc/$pid/wchan" 2>/dev/null && break
  sleep 0.1
done
kill -SEGV $pid
wait $pid; rc=$?
check "a crash inside a read is exit 2 naming the file" \
  bash -c "[ $rc -eq 2 ] && grep -q 'stall.h5: the HDF5 library crashed' '$tmp/segv.err'"

# ---------------------------------------------------------------- bad input: exit 2, named
err=$("$bin" census "$tmp/none.h5" 2>&1); rc=$?
check "missing file: exit 2 naming it ($err)" bash -c "[ $rc -eq 2 ] && grep -q '$tmp/none.h5' <<<\"\$0\"" "$err"
echo "not hdf5" >"$tmp/text.h5"
err=$("$bin" census "$tmp/text.h5" 2>&1); rc=$?
check "text file: exit 2, not an HDF5 file ($err)" bash -c "[ $rc -eq 2 ] && grep -q 'not an HDF5 file' <<<\"\$0\"" "$err"
err=$("$bin" census 2>&1); rc=$?
check "no file: exit 2 with usage" bash -c "[ $rc -eq 2 ] && grep -q 'missing WEIGHTS.h5' <<<\"\$0\"" "$err"
err=$("$bin" census "$tmp/known.h5" --tol 2 2>&1); rc=$?
check "bad --tol: exit 2" test $rc -eq 2
err=$("$bin" census "$tmp/known.h5" --frob 2>&1); rc=$?
check "unknown option: exit 2" bash -c "[ $rc -eq 2 ] && grep -q \"unknown option '--frob'\" <<<\"\$0\"" "$err"
"$py" - "$tmp" <<'PY'
import sys, h5py, numpy as np
t = sys.argv[1]
with h5py.File(t + "/nov.h5", "w") as f:
    f["triples/M"] = np.eye(3)[None]
with h5py.File(t + "/nan.h5", "w") as f:
    V = np.stack([np.eye(3)] * 3); V[2, 1, 0] = np.nan
    f["triples/V"] = V; f["triples/M"] = np.stack([np.eye(3)] * 3)
with h5py.File(t + "/labels.h5", "w") as f:
    f["triples/V"] = np.stack([np.eye(3)] * 3); f["triples/M"] = np.stack([np.eye(3)] * 3)
    f["triples/layer"] = np.zeros(2, dtype=np.int32)
PY
err=$("$bin" census "$tmp/nov.h5" 2>&1); rc=$?
check "no /triples/V: exit 2 naming it ($err)" bash -c "[ $rc -eq 2 ] && grep -q 'dataset /triples/V is missing' <<<\"\$0\"" "$err"
err=$("$mpiexec" -n 2 "$bin" census "$tmp/nan.h5" 2>&1); rc=$?
check "NaN in triple 2 (2 ranks): exit 2 naming item and entry ($err)" \
  bash -c "[ $rc -eq 2 ] && grep -q 'dataset /triples/V, item 2: entry (1, 0) is nan' <<<\"\$0\"" "$err"
err=$("$bin" census "$tmp/labels.h5" 2>&1); rc=$?
check "labels of the wrong length: exit 2 naming the dataset ($err)" \
  bash -c "[ $rc -eq 2 ] && grep -q '/triples/layer must hold 3 integers' <<<\"\$0\"" "$err"
out=$("$bin" census "$tmp/nan.h5" -o "$tmp/no/such/dir.md" 2>&1); rc=$?
check "unwritable -o: exit 3 ($out)" test $rc -eq 3

# ---------------------------------------------------------------- end to end
out=$(ATTNSWEEP=$bin MPIEXEC=$mpiexec RANKS=2 bash "$src/jobs/examples/imported_heads.sh" "$tmp/e2e" 2>&1); rc=$?
echo "$out" | tail -25
check "imported_heads.sh: checkpoint -> import -> census -> sweep -> summary, exit 0" test $rc -eq 0
check "e2e: census of 8 imported heads" grep -q "^good triples: [0-8] of 8 heads$" "$tmp/e2e/census.md"
check "e2e: sweep complete" "$py" "$tools/compare_results.py" --complete "$tmp/e2e/imported_small.h5" --closed
"$py" - "$tmp/e2e/imported_small.h5" "$tmp/e2e/census.csv" <<'PY'
import csv, sys, h5py
fail = 0
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][...]
    th = {v: k for k, v in h5py.check_enum_dtype(t.dtype["theorem"]).items()}
rows = list(csv.DictReader(open(sys.argv[2])))
if len(t) != 16 or len(rows) != 8:
    print("FAIL: %d trials, %d census rows" % (len(t), len(rows))); sys.exit(1)
for r in t:  # plan order: replicate slowest, then file_index 0..7
    c = rows[int(r["trial"]) % 8]
    if th[r["theorem"]] != c["theorem"] or float(c["lambda1_re"]) != r["lambda1_re"] \
       or int(c["flags"]) != int(r["flags"]):
        print("FAIL: trial %d: %s / %r / %d vs census %s / %s / %s" % (
            r["trial"], th[r["theorem"]], r["lambda1_re"], r["flags"], c["theorem"],
            c["lambda1_re"], c["flags"])); fail = 1
print("16 records carry the census analysis of their head")
sys.exit(fail)
PY
check "e2e: each record's theorem, lambda_1 and flags are the census row of its head" test $? -eq 0

# The factored path (V = VL VR analysed through r x r problems, the default from d >= 512) on the
# same 8 heads: every flag but V_DIAGONALISABLE, the theorem, kpos and dim F as the d x d
# analysis; numbers within the analysis' own tolerance (1e-10 of abs lambda_1 on eigenvalues).
"$bin" census "$tmp/e2e/imported_heads.h5" --csv --factored -o "$tmp/e2e/factored.csv" 2>/dev/null
check "census --factored: exit 0" test $? -eq 0
"$py" - "$tmp/e2e/census.csv" "$tmp/e2e/factored.csv" <<'PY'
import csv, math, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
fail = int(len(a) != 8 or len(b) != 8)
exact = ["lead_real", "lead_positive", "lead_simple", "lead_dominant", "margin_positive", "good",
         "m_symmetric", "m_spd", "kpos", "paranormal", "dim_f", "complex_lead", "theorem",
         "predicted", "layer", "head", "status", "m_min_sym_eig", "m_asym", "m_norm_f"]
close = ["lambda1_re", "lambda1_im", "lambda2_abs", "gap", "sep_rel", "mu", "margin",
         "angle_l1_phi1"]
for x, y in zip(a, b):
    for k in exact:
        if x[k] != y[k]:
            print("FAIL: head %s: %s %s (d x d) vs %s (factored)" % (x["index"], k, x[k], y[k])); fail = 1
    if int(x["flags"]) & ~(1 << 14) != int(y["flags"]) or y["eig_cond"] != "nan":
        print("FAIL: head %s: flags %s/%s eig_cond %s" % (x["index"], x["flags"], y["flags"], y["eig_cond"])); fail = 1
    s = math.hypot(float(x["lambda1_re"]), float(x["lambda1_im"]))
    for k in close:
        u, v = float(x[k]), float(y[k])
        tol = 1e-6 if k == "angle_l1_phi1" else 1e-10 * max(s, 1e-300)
        if not (math.isnan(u) and math.isnan(v)) and not abs(u - v) <= tol:
            print("FAIL: head %s: %s %r vs %r" % (x["index"], k, u, v)); fail = 1
print("compared %d heads" % len(a))
sys.exit(fail)
PY
check "factored and d x d census agree (flags, theorem; numbers within tol)" test $? -eq 0
out=$("$bin" census "$tmp/e2e/imported_heads.h5" --factored --expanded 2>&1); rc=$?
check "--factored with --expanded: exit 2 ($out)" test $rc -eq 2

# from_file.yaml's recipe at small size: an ALBERT-layout checkpoint (shared layer, embedding
# size 16 != d = 64) imported as albert_heads.h5, the spec shrunk from d = 2048 to 64.
mkdir -p "$tmp/ff"
"$py" "$src/jobs/examples/make_test_checkpoint.py" "$tmp/ff/albert" --albert 2>/dev/null
out=$(cd "$tmp/ff" && "$bin" import-weights albert -o albert_heads.h5 2>&1); rc=$?
check "import the ALBERT-layout checkpoint ($out)" \
  bash -c "[ $rc -eq 0 ] && grep -q 'albert, 1 layer x 4 heads (d = 64, d_k = 16' <<<\"\$0\"" "$out"
sed -e 's/^  d: 2048$/  d: 64/' -e 's/^  m_rows: 128$/  m_rows: 16/' -e 's/^replicates: 4$/replicates: 1/' \
  -e 's/^  T: 5$/  T: 1/' "$src/jobs/examples/from_file.yaml" >"$tmp/ff/from_file.yaml"
check "from_file.yaml shrunk (4 lines changed)" \
  test "$(diff "$src/jobs/examples/from_file.yaml" "$tmp/ff/from_file.yaml" | grep -c '^>')" -eq 4
out=$(cd "$tmp/ff" && "$mpiexec" -n 2 "$bin" run from_file.yaml -o from_file.h5 2>&1); rc=$?
check "from_file.yaml runs on the imported ALBERT heads ($out)" test $rc -eq 0
check "from_file.h5 complete" "$py" "$tools/compare_results.py" --complete "$tmp/ff/from_file.h5" --closed
exit $fail
