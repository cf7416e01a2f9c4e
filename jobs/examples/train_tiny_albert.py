#!/usr/bin/python3
"""A model trained here: do trained heads satisfy the theorems' hypotheses, and do they cluster?

usage: train_tiny_albert.py OUTDIR [--steps N] [--seed S] [--minutes M]

Trains a small weight-shared (ALBERT-style) encoder with PyTorch (Debian: apt-get install
python3-torch) on masked tokens of a synthetic grammar it generates: sentences of a random
sparse first-order Markov chain over 24 tokens (each token has 3 possible successors), 15 % of
the tokens masked, the model predicting them from both sides. One stored layer (8 heads,
d = 64, d_k = 8, embedding size 32) is applied 4 times, as ALBERT does. It writes, in the
naming of Hugging Face's AlbertForMaskedLM (safetensors, numpy only):
    OUTDIR/init/model.safetensors, config.json      the same model before training
    OUTDIR/trained/model.safetensors, config.json   after training
then runs, for both (ATTNSWEEP: the binary, default attnsweep on PATH):
    attnsweep import-weights DIR -o DIR/heads.h5            one triple per head
    attnsweep census DIR/heads.h5 --csv                     the hypotheses per head
    attnsweep import-weights DIR -o DIR/layer.h5 --stack-heads
    attnsweep run DIR/layer.yaml -o DIR/layer_out.h5         the 8 heads as one layer
and prints the table: fraction of heads with a real dominant lambda_1, a good triple, a
positive margin <Q phi_1, K phi_1>, M symmetric, M positive definite, the median margins, the
theorems, and the clusters the layer's dynamics forms from random tokens, trained against
random initialisation. It takes a few minutes on 2 cores (--minutes bounds the training).
"""

import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:
    print("train_tiny_albert.py: needs numpy (apt-get install python3-numpy)", file=sys.stderr)
    sys.exit(3)
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("train_tiny_albert.py: needs PyTorch: apt-get install python3-torch (Debian), or "
          "pip install torch; nothing was written", file=sys.stderr)
    sys.exit(3)

VOCAB, MASK = 24, 24          # tokens 0..23, 24 = [MASK]
N, E, D, HEADS, REPEATS = 24, 32, 64, 8, 4


def grammar(rng):
    """A sparse Markov chain: each token has 3 successors with random probabilities."""
    P = np.zeros((VOCAB, VOCAB))
    for a in range(VOCAB):
        nxt = rng.choice(VOCAB, 3, replace=False)
        P[a, nxt] = rng.dirichlet(np.ones(3))
    return P


def sentences(rng, P, count):
    cum = np.cumsum(P, axis=1)
    x = np.empty((count, N), dtype=np.int64)
    x[:, 0] = rng.integers(0, VOCAB, count)
    for i in range(1, N):
        u = rng.random(count)[:, None]
        x[:, i] = np.minimum((u > cum[x[:, i - 1]]).sum(axis=1), VOCAB - 1)
    return x


class TinyAlbert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        L = torch.nn.Linear
        self.word = torch.nn.Embedding(VOCAB + 1, E)
        self.pos = torch.nn.Embedding(N, E)
        self.emb_ln = torch.nn.LayerNorm(E)
        self.mapping = L(E, D)
        self.q, self.k, self.v, self.dense = L(D, D), L(D, D), L(D, D), L(D, D)
        self.att_ln = torch.nn.LayerNorm(D)
        self.ffn, self.ffn_out = L(D, 4 * D), L(4 * D, D)
        self.full_ln = torch.nn.LayerNorm(D)
        self.pred_dense, self.pred_ln, self.decoder = L(D, E), torch.nn.LayerNorm(E), L(E, VOCAB)

    def layer(self, h):
        b, n, _ = h.shape
        dk = D // HEADS
        split = lambda t: t.view(b, n, HEADS, dk).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        p = torch.softmax(q @ k.transpose(-1, -2) / dk ** 0.5, dim=-1)
        ctx = (p @ v).transpose(1, 2).reshape(b, n, D)
        h = self.att_ln(h + self.dense(ctx))
        return self.full_ln(h + self.ffn_out(F.gelu(self.ffn(h))))

    def forward(self, x):
        pos = torch.arange(N)
        h = self.mapping(self.emb_ln(self.word(x) + self.pos(pos)))
        for _ in range(REPEATS):  # one stored layer, applied REPEATS times (ALBERT)
            h = self.layer(h)
        return self.decoder(self.pred_ln(F.gelu(self.pred_dense(h))))


def state_dict_hf(model):
    """The parameters under AlbertForMaskedLM's names."""
    lay = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    names = {"word": "albert.embeddings.word_embeddings", "pos":
             "albert.embeddings.position_embeddings", "emb_ln": "albert.embeddings.LayerNorm",
             "mapping": "albert.encoder.embedding_hidden_mapping_in",
             "q": lay + "attention.query", "k": lay + "attention.key", "v": lay + "attention.value",
             "dense": lay + "attention.dense", "att_ln": lay + "attention.LayerNorm",
             "ffn": lay + "ffn", "ffn_out": lay + "ffn_output",
             "full_ln": lay + "full_layer_layer_norm", "pred_dense": "predictions.dense",
             "pred_ln": "predictions.LayerNorm", "decoder": "predictions.decoder"}
    out = {}
    for key, t in model.state_dict().items():
        mod, _, leaf = key.partition(".")
        out[names[mod] + "." + leaf] = t.detach().cpu().numpy().astype("<f4")
    return out


def write_checkpoint(dirname, tensors):
    """safetensors (8-byte header length, JSON header, raw little-endian data) + config.json."""
    os.makedirs(dirname, exist_ok=True)
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name]).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(os.path.join(dirname, "model.safetensors"), "wb") as f:
        f.write(len(js).to_bytes(8, "little") + js + b"".join(blobs))
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump({"model_type": "albert", "num_attention_heads": HEADS, "hidden_size": D,
                   "embedding_size": E, "num_hidden_layers": REPEATS, "num_hidden_groups": 1,
                   "inner_group_num": 1, "vocab_size": VOCAB + 1,
                   "max_position_embeddings": N}, f)


def masked_batch(rng, P, count):
    x = torch.from_numpy(sentences(rng, P, count))
    m = torch.from_numpy(rng.random((count, N)) < 0.15)
    return x.masked_fill(m, MASK), x, m


def train(outdir, steps, seed, minutes):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    P = grammar(rng)
    model = TinyAlbert()
    write_checkpoint(os.path.join(outdir, "init"), state_dict_hf(model))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    test_in, test_x, test_m = masked_batch(np.random.default_rng(seed + 1), P, 512)
    t0, step = time.monotonic(), 0
    for step in range(1, steps + 1):
        inp, x, m = masked_batch(rng, P, 64)
        loss = F.cross_entropy(model(inp)[m], x[m])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 250 == 0 or step == steps:
            with torch.no_grad():
                acc = (model(test_in)[test_m].argmax(-1) == test_x[test_m]).float().mean()
            print("step %d: loss %.3f, masked-token accuracy %.3f (%.0f s)" % (
                step, float(loss), float(acc), time.monotonic() - t0), file=sys.stderr)
        if time.monotonic() - t0 > 60 * minutes:
            print("stopped at %d steps: --minutes %g" % (step, minutes), file=sys.stderr)
            break
    write_checkpoint(os.path.join(outdir, "trained"), state_dict_hf(model))
    with torch.no_grad():
        acc = float((model(test_in)[test_m].argmax(-1) == test_x[test_m]).float().mean())
    return step, acc, time.monotonic() - t0


def attnsweep(*args):
    binary = os.environ.get("ATTNSWEEP", "attnsweep")
    r = subprocess.run([binary] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        print("train_tiny_albert.py: attnsweep %s failed (exit %d):\n%s" % (
            " ".join(args), r.returncode, r.stderr), file=sys.stderr)
        sys.exit(r.returncode)
    return r.stdout, r.stderr


def analyse(dirname, seed):
    """Census and the layer's sweep of one checkpoint directory."""
    heads = os.path.join(dirname, "heads.h5")
    attnsweep("import-weights", dirname, "-o", heads)
    out, _ = attnsweep("census", heads, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    layer = os.path.join(dirname, "layer.h5")
    attnsweep("import-weights", dirname, "-o", layer, "--stack-heads")
    spec = os.path.join(dirname, "layer.yaml")
    with open(spec, "w") as f:
        f.write("name: tiny_albert_layer\nseed: %d\nreplicates: 8\nsweep:\n  vfamily: file\n"
                "  mfamily: file\n  file: layer.h5\n  file_index: 0\n  heads: %d\n"
                "  m_rows: %d\n  d: %d\n  n: 32\n  T: 30\n  dt: 0.05\n"
                "  init: {kind: gauss, scale: 1}\n" % (seed, HEADS, D // HEADS, D))
    res = os.path.join(dirname, "layer_out.h5")
    attnsweep("run", spec, "-o", res, "--force")
    import h5py
    with h5py.File(res, "r") as f:
        t = f["trials"][...]
    return rows, t


def frac(rows, pred):
    return "%d/%d" % (sum(1 for r in rows if pred(r)), len(rows))


def med(rows, key, pred=lambda r: True):
    v = [float(r[key]) for r in rows if pred(r) and r[key] not in ("nan", "")]
    return "%.3g" % statistics.median(v) if v else "-"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    outdir, steps, seed, minutes = argv[0], 3000, 7, 7.0
    opts = argv[1:]
    while opts:
        key = opts.pop(0)
        if key not in ("--steps", "--seed", "--minutes") or not opts:
            print("train_tiny_albert.py: unknown option or missing value: %s" % key,
                  file=sys.stderr)
            return 2
        val = opts.pop(0)
        if key == "--steps":
            steps = int(val)
        elif key == "--seed":
            seed = int(val)
        else:
            minutes = float(val)
    torch.set_num_threads(1)  # tensors this small run slower on more threads (measured)
    done, acc, secs = train(outdir, steps, seed, minutes)
    table = {}
    for which in ("init", "trained"):
        table[which] = analyse(os.path.join(outdir, which), seed)

    def real_dom(r):
        return r["lead_real"] == "1" and r["lead_dominant"] == "1"
    lines = [
        ("real dominant lambda_1", lambda rows: frac(rows, real_dom)),
        ("real positive dominant lambda_1", lambda rows: frac(
            rows, lambda r: real_dom(r) and r["lead_positive"] == "1")),
        ("good triple (Def 1)", lambda rows: frac(rows, lambda r: r["good"] == "1")),
        ("margin <Q phi_1, K phi_1> > 0", lambda rows: frac(
            rows, lambda r: r["margin_positive"] == "1")),
        ("M symmetric", lambda rows: frac(rows, lambda r: r["m_symmetric"] == "1")),
        ("M positive definite", lambda rows: frac(rows, lambda r: r["m_spd"] == "1")),
        ("median gap / abs lambda_1 (real lambda_1)", lambda rows: med(
            rows, "gap_rel", lambda r: r["lead_real"] == "1")),
        ("median margin <Q phi_1, K phi_1>", lambda rows: med(rows, "margin")),
        ("median asym(M)", lambda rows: med(rows, "m_asym")),
        ("median min eig sym(M)", lambda rows: med(rows, "m_min_sym_eig")),
        ("theorems", lambda rows: ", ".join("%s %d" % (k, v) for k, v in sorted(
            {th: sum(1 for r in rows if r["theorem"] == th)
             for th in {r["theorem"] for r in rows}}.items()))),
    ]
    print("tiny ALBERT (1 stored layer x %d repeats, %d heads, d = %d, d_k = %d): %d steps in "
          "%.0f s, masked-token accuracy %.3f" % (REPEATS, HEADS, D, D // HEADS, done, secs, acc))
    print()
    print("| per head (census) | random initialisation | trained |")
    print("|---|---|---|")
    for name, fn in lines:
        print("| %s | %s | %s |" % (name, fn(table["init"][0]), fn(table["trained"][0])))
    print()
    print("| the %d heads as one layer (heads: %d, n = 32, T = 30, 8 replicates) | random "
          "initialisation | trained |" % (HEADS, HEADS))
    print("|---|---|---|")
    for name, key in (("median clusters", "n_clusters"), ("median residual", "residual")):
        vals = []
        for which in ("init", "trained"):
            t = table[which][1]
            v = [float(x) for x in t[key] if np.isfinite(x) and x >= 0]
            vals.append("%.3g" % statistics.median(v) if v else "-")
        print("| %s | %s | %s |" % (name, vals[0], vals[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
