#!/usr/bin/python3
"""Write a small matrices file for jobs/examples/from_file_small.yaml (layout: docs/matrices.md).

usage: /usr/bin/python3 jobs/make_example_matrices.py [OUT.h5] [--seed S]
       (default OUT: example_matrices.h5 in the current directory)

Four stand-in "attention heads" in d = 64 with head dimension d_k = 16, shaped like trained
weights (ALBERT-like, random here; nothing is downloaded):
  /triples/V  [4][64][64]  value matrices: V = W_O W_V, rank <= d_k, scaled to spectral radius ~1,
                           plus 0.5 I (a residual-like identity part) for triples 0 and 1
  /triples/Q  [4][16][64]  query matrices (rows = d_k)
  /triples/K  [4][16][64]  key matrices; the dynamics uses M = mscale * Q^T K
  /triples    attribute mscale = 1/sqrt(d_k)
  /tokens/start [32][64]   initial tokens, uniform on [-1, 1]
The file is deterministic for a given seed. The spec that reads it runs in the directory that
holds it (file paths in a spec are relative to the working directory of `attnsweep run`).
"""
import sys

import h5py
import numpy as np


def main(argv):
    out, seed = "example_matrices.h5", 2024
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--seed" and args:
            seed = int(args.pop(0))
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            out = a
    d, dk, k, n = 64, 16, 4, 32
    rng = np.random.default_rng(seed)
    V = np.empty((k, d, d))
    for h in range(k):
        w_v = rng.standard_normal((dk, d)) / np.sqrt(d)
        w_o = rng.standard_normal((d, dk)) / np.sqrt(dk)
        v = w_o @ w_v
        v /= max(np.abs(np.linalg.eigvals(v)).max(), 1e-12)
        if h < 2:
            v += 0.5 * np.eye(d)
        V[h] = v
    Q = rng.standard_normal((k, dk, d))
    K = rng.standard_normal((k, dk, d))
    with h5py.File(out, "w") as f:
        g = f.create_group("triples")
        g["V"] = V
        g["Q"] = Q
        g["K"] = K
        g.attrs["mscale"] = 1.0 / np.sqrt(dk)
        f["tokens/start"] = rng.uniform(-1.0, 1.0, (n, d))
    print(f"wrote {out}: {k} triples (V {d}x{d}, Q and K {dk}x{d}), tokens/start {n}x{d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
