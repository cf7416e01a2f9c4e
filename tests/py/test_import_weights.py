#!/usr/bin/python3
"""Tests of `attnsweep import-weights` (analysis/import_weights.py) on small checkpoints.

Every checkpoint is written here with numpy in the safetensors format (8-byte little-endian
header length, JSON header, raw little-endian tensors), in the naming convention of each model
(BERT, ViT, ALBERT with shared layers and embedding size != hidden size, GPT-2 with its fused
Conv1D c_attn), with the other tensors a real checkpoint holds beside the attention (biases,
layer norms, MLP, embeddings; GPT-2's MLP c_proj next to attn.c_proj). d = 64, 4 heads, 2 layers.

The expected matrices do not come from the importer: each model's attention is evaluated here
the way the model computes it (nn.Linear: y = x W^T; Conv1D: y = x W; heads = consecutive
blocks of d_k features; scores q k^T / sqrt(d_k); output projection of the concatenated
heads), and the imported triples must reproduce it on random tokens X (n > d, full rank):
    X M_h X^T = scores of head h,   X V_h^T = head h's value-output path,
    sum_h softmax(X M_h X^T) X V_h^T = the model's attention output (biases zero).
The error cases (missing tensor, a shape that does not divide into heads, unknown layout...)
must exit 2 with a message naming the tensor.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

SRC = os.environ.get("AS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(SRC, "analysis", "import_weights.py")
BIN = os.environ.get("ATTNSWEEP")

D, H, L, DK = 64, 4, 2, 16


# ---------------------------------------------------------------- writing checkpoints

def stored(a, dtype):
    """a rounded to a safetensors dtype, as (raw bytes, the float64 values they hold)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    if dtype == "F64":
        return a.astype("<f8").tobytes(), a
    if dtype == "F32":
        b = a.astype("<f4")
        return b.tobytes(), b.astype(np.float64)
    if dtype == "F16":
        b = a.astype("<f2")
        return b.tobytes(), b.astype(np.float64)
    if dtype == "BF16":  # truncate float32 to its upper 16 bits
        bits = a.astype("<f4").view("<u4") >> 16
        raw = bits.astype("<u2").tobytes()
        return raw, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype="F32", raw_extra=None):
    """Writes tensors {name: array} with one dtype; returns {name: values as stored}.
    raw_extra: {name: (dtype, shape, bytes)} written as given (e.g. a BOOL buffer)."""
    header, blobs, values, off = {"__metadata__": {"format": "pt"}}, [], {}, 0
    items = [(n, stored(a, dtype), dtype, list(np.shape(a))) for n, a in tensors.items()]
    for n, (dt, shape, raw) in (raw_extra or {}).items():
        items.append((n, (raw, None), dt, shape))
    for name, (raw, val), dt, shape in items:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
        if val is not None:
            values[name] = val
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)  # the reference writer pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(len(js).to_bytes(8, "little"))
        f.write(js)
        for b in blobs:
            f.write(b)
    return values


def write_config(dirname, **kw):
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(kw, f)


def lin(rng, out, inp, s=0.02):
    return rng.normal(0, s, (out, inp))


def bert_like(rng, prefix, attn_kind, layers=L, d=D):
    """Tensors of a BERT (attn_kind 'self') or ViT ('attention') encoder."""
    t = {}
    if attn_kind == "self":
        t[prefix + "embeddings.word_embeddings.weight"] = lin(rng, 100, d)
        t[prefix + "embeddings.position_embeddings.weight"] = lin(rng, 32, d)
        t[prefix + "embeddings.LayerNorm.weight"] = np.ones(d)
    else:
        t[prefix + "embeddings.cls_token"] = lin(rng, 1, d)[None]
        t[prefix + "embeddings.patch_embeddings.projection.weight"] = rng.normal(0, .02,
                                                                                  (d, 3, 4, 4))
    for l in range(layers):
        p = "%sencoder.layer.%d." % (prefix, l)
        a = p + "attention.%s." % attn_kind
        for r in ("query", "key", "value"):
            t[a + r + ".weight"] = lin(rng, d, d)
            t[a + r + ".bias"] = lin(rng, 1, d)[0]
        t[p + "attention.output.dense.weight"] = lin(rng, d, d)
        t[p + "attention.output.dense.bias"] = lin(rng, 1, d)[0]
        t[p + "intermediate.dense.weight"] = lin(rng, 4 * d, d)
        t[p + "output.dense.weight"] = lin(rng, d, 4 * d)  # the MLP's, not the attention's
        if attn_kind == "self":
            t[p + "attention.output.LayerNorm.weight"] = np.ones(d)
        else:
            t[p + "layernorm_before.weight"] = np.ones(d)
            t[p + "layernorm_after.weight"] = np.ones(d)
    return t


def albert_like(rng, prefix, groups=1, inner=1, emb=16, d=D):
    t = {prefix + "embeddings.word_embeddings.weight": lin(rng, 100, emb),
         prefix + "embeddings.LayerNorm.weight": np.ones(emb),
         prefix + "encoder.embedding_hidden_mapping_in.weight": lin(rng, d, emb),
         prefix + "encoder.embedding_hidden_mapping_in.bias": np.zeros(d),
         "predictions.dense.weight": lin(rng, emb, d)}
    for g in range(groups):
        for i in range(inner):
            p = "%sencoder.albert_layer_groups.%d.albert_layers.%d." % (prefix, g, i)
            for r in ("query", "key", "value", "dense"):
                t[p + "attention.%s.weight" % r] = lin(rng, d, d)
                t[p + "attention.%s.bias" % r] = np.zeros(d)
            t[p + "attention.LayerNorm.weight"] = np.ones(d)
            t[p + "ffn.weight"] = lin(rng, 4 * d, d)
            t[p + "ffn_output.weight"] = lin(rng, d, 4 * d)
    return t


def gpt2_like(rng, prefix, layers=L, d=D):
    t = {prefix + "wte.weight": lin(rng, 100, d), prefix + "wpe.weight": lin(rng, 32, d)}
    for l in range(layers):
        p = "%sh.%d." % (prefix, l)
        t[p + "ln_1.weight"] = np.ones(d)
        t[p + "attn.c_attn.weight"] = lin(rng, d, 3 * d)  # Conv1D [in, out]
        t[p + "attn.c_attn.bias"] = lin(rng, 1, 3 * d)[0]
        t[p + "attn.c_proj.weight"] = lin(rng, d, d)
        t[p + "attn.c_proj.bias"] = lin(rng, 1, d)[0]
        t[p + "mlp.c_fc.weight"] = lin(rng, d, 4 * d)
        t[p + "mlp.c_proj.weight"] = lin(rng, 4 * d, d)  # not the attention's c_proj
    return t


# ---------------------------------------------------------------- the models' own attention

def model_heads(kind, w, prefix, layer_key):
    """Per head: (query map, key map, value-output map) as functions of the tokens X (n x d),
    computed the way the model computes its attention (biases left out)."""
    if kind == "gpt2":
        ca = w["%sh.%s.attn.c_attn.weight" % (prefix, layer_key)]
        cp = w["%sh.%s.attn.c_proj.weight" % (prefix, layer_key)]
        a = ca.shape[1] // 3

        def qkv(X):
            y = X @ ca  # Conv1D: x W
            return y[:, :a], y[:, a:2 * a], y[:, 2 * a:]

        def proj(ctx):  # ctx: n x A, the concatenated heads
            return ctx @ cp
    else:
        if kind == "albert":
            g, i = layer_key
            p = "%sencoder.albert_layer_groups.%d.albert_layers.%d.attention." % (prefix, g, i)
            wq, wk, wv, wo = (w[p + r + ".weight"] for r in ("query", "key", "value", "dense"))
        else:
            sub = "self" if kind == "bert" else "attention"
            p = "%sencoder.layer.%s.attention." % (prefix, layer_key)
            wq, wk, wv = (w[p + sub + "." + r + ".weight"] for r in ("query", "key", "value"))
            wo = w[p + "output.dense.weight"]

        def qkv(X):  # nn.Linear: x W^T
            return X @ wq.T, X @ wk.T, X @ wv.T

        def proj(ctx):
            return ctx @ wo.T
    return qkv, proj


def model_attention(qkv, proj, X, heads):
    """The model's multi-head attention output on tokens X (no biases, no mask)."""
    q, k, v = qkv(X)
    dk = q.shape[1] // heads
    ctx = np.zeros_like(v)
    for h in range(heads):
        s = slice(h * dk, (h + 1) * dk)
        sc = q[:, s] @ k[:, s].T / np.sqrt(dk)
        p = np.exp(sc - sc.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        ctx[:, s] = p @ v[:, s]
    return proj(ctx)


# ---------------------------------------------------------------- running the importer

def run_import(args):
    cmd = [BIN, "import-weights"] if BIN else [sys.executable, SCRIPT]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class ImportCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="as_import_")
        self.dir = self.tmp.name
        self.rng = np.random.default_rng(20240519)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def imported(self, out):
        with h5py.File(out, "r") as f:
            g = f["triples"]
            return (g["Q"][...], g["K"][...], g["V"][...], float(g.attrs["mscale"]),
                    g["layer"][...], g["head"][...], dict(g.attrs),
                    [[x.decode() if isinstance(x, bytes) else x for x in row]
                     for row in g["tensors"][...]])

    def check_against_model(self, kind, w, prefix, layer_keys, out, heads=H, d=D, labels=None):
        """layer_keys: the model's layer index (tuple for ALBERT) of each imported layer, in
        file order; labels: their expected /triples/layer values (default 0, 1, ...)."""
        labels = list(range(len(layer_keys))) if labels is None else labels
        Q, K, V, mscale, lay, hd, attrs, names = self.imported(out)
        dk = d // heads
        self.assertEqual(Q.shape, (len(layer_keys) * heads, dk, d))
        self.assertEqual(K.shape, Q.shape)
        self.assertEqual(V.shape, (len(layer_keys) * heads, d, d))
        self.assertAlmostEqual(mscale, 1 / np.sqrt(dk), places=15)
        self.assertEqual(int(attrs["num_heads"]), heads)
        self.assertEqual(int(attrs["d_k"]), dk)
        X = self.rng.standard_normal((3 * d, d))  # full column rank: identifies d x d maps
        for li, key in enumerate(layer_keys):
            qkv, proj = model_heads(kind, w, prefix, key)
            q, k, v = qkv(X)
            total = np.zeros((X.shape[0], d))
            for h in range(heads):
                t = li * heads + h
                self.assertEqual((lay[t], hd[t]), (labels[li], h))
                s = slice(h * dk, (h + 1) * dk)
                scores = q[:, s] @ k[:, s].T / np.sqrt(dk)
                M = mscale * Q[t].T @ K[t]
                got = X @ M @ X.T
                self.assertLess(np.abs(got - scores).max(), 1e-12 * np.abs(scores).max(),
                                "%s layer %d head %d: scores" % (kind, li, h))
                # head h's value-output path: its value features through its rows of W_O
                ctx = np.zeros_like(v)
                ctx[:, s] = v[:, s]
                vo = proj(ctx)
                self.assertLess(np.abs(X @ V[t].T - vo).max(), 1e-12 * np.abs(vo).max(),
                                "%s layer %d head %d: value-output" % (kind, li, h))
                self.assertLessEqual(np.linalg.matrix_rank(V[t]), dk)
                sc = X @ M @ X.T
                p = np.exp(sc - sc.max(axis=1, keepdims=True))
                p /= p.sum(axis=1, keepdims=True)
                total += p @ X @ V[t].T
                for n in names[t]:
                    self.assertTrue(n.split("[")[0] in w, "tensor name %s recorded" % n)
            ref = model_attention(qkv, proj, X, heads)
            self.assertLess(np.abs(total - ref).max(), 1e-12 * np.abs(ref).max(),
                            "%s layer %d: attention output" % (kind, li))


class TestConventions(ImportCase):
    def test_bert(self):
        w = write_safetensors(self.path("model.safetensors"), bert_like(self.rng, "bert.", "self"))
        write_config(self.dir, model_type="bert", num_attention_heads=H, hidden_size=D)
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors"), "-o", out])
        self.assertEqual(rc, 0, msg)
        self.assertIn("bert", msg)
        self.check_against_model("bert", w, "bert.", ["0", "1"], out)
        attrs = self.imported(out)[6]
        self.assertEqual(attrs["model"], "bert")
        self.assertEqual(attrs["prefix"], "bert.")
        self.assertEqual(attrs["biases"], "ignored")

    def test_vit_directory_and_heads_option(self):
        w = write_safetensors(self.path("model.safetensors"), bert_like(self.rng, "vit.",
                                                                        "attention"))
        out = self.path("w.h5")
        rc, msg = run_import([self.dir, "-o", out, "--model", "vit", "--heads", str(H)])
        self.assertEqual(rc, 0, msg)
        self.check_against_model("vit", w, "vit.", ["0", "1"], out)

    def test_albert_shared_layer_embedding_size(self):
        # ALBERT: one stored layer shared by num_hidden_layers = 2; embedding size 16 != d = 64.
        w = write_safetensors(self.path("model.safetensors"), albert_like(self.rng, "albert."))
        write_config(self.dir, model_type="albert", num_attention_heads=H, hidden_size=D,
                     embedding_size=16, num_hidden_layers=2, num_hidden_groups=1,
                     inner_group_num=1)
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors"), "-o", out])
        self.assertEqual(rc, 0, msg)
        self.check_against_model("albert", w, "albert.", [(0, 0)], out)
        attrs = self.imported(out)[6]
        self.assertEqual(int(attrs["d"]), D)
        self.assertEqual(int(attrs["config_num_hidden_layers"]), 2)
        self.assertEqual(int(attrs["config_embedding_size"]), 16)

    def test_albert_groups(self):
        # Two groups of two layers each: four stored layers, numbered g * inner + i.
        w = write_safetensors(self.path("model.safetensors"),
                              albert_like(self.rng, "", groups=2, inner=2), dtype="F64")
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors"), "-o", out, "--heads", "4"])
        self.assertEqual(rc, 0, msg)
        self.check_against_model("albert", w, "", [(0, 0), (0, 1), (1, 0), (1, 1)], out)

    def test_gpt2(self):
        extra = {"h.%d.attn.bias" % l: ("BOOL", [1, 1, 4, 4], bytes(16)) for l in range(L)}
        w = write_safetensors(self.path("model.safetensors"), gpt2_like(self.rng, ""),
                              raw_extra=extra)
        write_config(self.dir, model_type="gpt2", n_head=H, n_embd=D)
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors"), "-o", out])
        self.assertEqual(rc, 0, msg)
        self.assertIn("gpt2", msg)
        self.check_against_model("gpt2", w, "", ["0", "1"], out)

    def test_gpt2_prefixed_bf16_layers(self):
        w = write_safetensors(self.path("model.safetensors"),
                              gpt2_like(self.rng, "transformer.", layers=3), dtype="BF16")
        write_config(self.dir, n_head=H)
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors"), "-o", out, "--layers", "1-2"])
        self.assertEqual(rc, 0, msg)
        self.check_against_model("gpt2", w, "transformer.", ["1", "2"], out, labels=[1, 2])

    def test_f16_and_sharded_index(self):
        t = bert_like(self.rng, "", "self")
        names = sorted(t)
        half = len(names) // 2
        w = write_safetensors(self.path("model-00001-of-00002.safetensors"),
                              {n: t[n] for n in names[:half]}, dtype="F16")
        w.update(write_safetensors(self.path("model-00002-of-00002.safetensors"),
                                   {n: t[n] for n in names[half:]}, dtype="F16"))
        wm = {n: "model-0000%d-of-00002.safetensors" % (1 if i < half else 2)
              for i, n in enumerate(names)}
        with open(self.path("model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": wm}, f)
        write_config(self.dir, num_attention_heads=H)
        out = self.path("w.h5")
        rc, msg = run_import([self.dir, "-o", out])
        self.assertEqual(rc, 0, msg)
        self.check_against_model("bert", w, "", ["0", "1"], out)


class TestErrors(ImportCase):
    def bert_file(self, mutate=None, heads=H, prefix="bert."):
        t = bert_like(self.rng, prefix, "self")
        if mutate:
            mutate(t)
        write_safetensors(self.path("model.safetensors"), t)
        write_config(self.dir, num_attention_heads=heads)
        return self.path("model.safetensors")

    def expect_bad(self, args, *needles):
        out = self.path("bad.h5")
        rc, msg = run_import(list(args) + ["-o", out])
        self.assertEqual(rc, 2, msg)
        for n in needles:
            self.assertIn(n, msg)
        self.assertFalse(os.path.exists(out), "nothing is written on bad input")
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp" in f], [])
        return msg

    def test_missing_key(self):
        name = "bert.encoder.layer.1.attention.self.key.weight"
        ck = self.bert_file(lambda t: t.pop(name))
        self.expect_bad([ck], "tensor %s is missing" % name)

    def test_missing_output(self):
        name = "bert.encoder.layer.0.attention.output.dense.weight"
        ck = self.bert_file(lambda t: t.pop(name))
        self.expect_bad([ck], "tensor %s is missing" % name)

    def test_missing_layer_in_the_middle(self):
        def drop(t):
            for k in [k for k in t if ".layer.1.attention.self.query." in k]:
                t.pop(k)
            t.update({k.replace(".layer.0.", ".layer.2."): v for k, v in t.items()
                      if ".layer.0." in k})
        ck = self.bert_file(drop)
        self.expect_bad([ck], "bert.encoder.layer.1.attention.self.query.weight is missing")

    def test_heads_do_not_divide(self):
        ck = self.bert_file(heads=3)
        self.expect_bad([ck], "bert.encoder.layer.0.attention.self.query.weight",
                        "do not divide into 3 heads")

    def test_bad_shapes(self):
        name = "bert.encoder.layer.1.attention.self.value.weight"
        ck = self.bert_file(lambda t: t.update({name: lin(self.rng, D, 32)}))
        self.expect_bad([ck], name, "[64, 32]")
        name = "bert.encoder.layer.0.attention.output.dense.weight"
        ck = self.bert_file(lambda t: t.update({name: lin(self.rng, D, 2 * D)}))
        self.expect_bad([ck], name)
        t = gpt2_like(self.rng, "")
        t["h.1.attn.c_attn.weight"] = lin(self.rng, D, 3 * D - 1)
        write_safetensors(self.path("model.safetensors"), t)
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"],
                        "h.1.attn.c_attn.weight")
        t = gpt2_like(self.rng, "")
        t["h.0.attn.c_attn.weight"] = lin(self.rng, D, 3 * 30)
        t["h.1.attn.c_attn.weight"] = lin(self.rng, D, 3 * 30)
        write_safetensors(self.path("model.safetensors"), t)
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"],
                        "h.0.attn.c_attn.weight", "do not divide into 4 heads")

    def test_unknown_layout(self):
        write_safetensors(self.path("model.safetensors"), {"foo.weight": np.ones((3, 3))})
        self.expect_bad([self.path("model.safetensors"), "--heads", "1"], "unknown layout",
                        "foo.weight", "encoder.layer.{l}.attention.self.query.weight")

    def test_wrong_model(self):
        ck = self.bert_file()
        self.expect_bad([ck, "--model", "gpt2"], "unknown layout", "h.{l}.attn.c_attn.weight")

    def test_heads_unknown(self):
        write_safetensors(self.path("model.safetensors"), bert_like(self.rng, "", "self"))
        self.expect_bad([self.path("model.safetensors")], "number of heads", "config.json")
        write_config(self.dir, hidden_size=D)
        self.expect_bad([self.path("model.safetensors")], "num_attention_heads nor n_head")

    def test_not_safetensors_and_bad_offsets(self):
        with open(self.path("model.safetensors"), "wb") as f:
            f.write(b"\x00" * 4)
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"], "not a safetensors")
        with open(self.path("model.safetensors"), "wb") as f:
            f.write((1 << 40).to_bytes(8, "little") + b"{}")
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"], "header length")
        ck = self.bert_file()
        with open(ck, "rb") as f:
            data = f.read()
        with open(ck, "wb") as f:
            f.write(data[:-100])  # the last tensor's bytes run past the end
        self.expect_bad([ck], "outside the")
        self.expect_bad([self.path("none.safetensors"), "--heads", "4"], "no such checkpoint")

    def test_non_finite_and_bad_dtype(self):
        name = "bert.encoder.layer.0.attention.self.key.weight"

        def nan(t):
            t[name] = t[name].copy()
            t[name][3, 5] = np.nan
        self.expect_bad([self.bert_file(nan)], name, "(3, 5)", "not finite")
        t = bert_like(self.rng, "", "self")
        q = "encoder.layer.0.attention.self.query.weight"
        raw = np.zeros((D, D), dtype="<i4").tobytes()
        t.pop(q)
        write_safetensors(self.path("model.safetensors"), t, raw_extra={q: ("I32", [D, D], raw)})
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"], q, "dtype I32")

    def test_ambiguous_prefix_and_bad_args(self):
        t = bert_like(self.rng, "student.", "self")
        t.update(bert_like(self.rng, "teacher.", "self"))
        write_safetensors(self.path("model.safetensors"), t)
        self.expect_bad([self.path("model.safetensors"), "--heads", "4"], "several prefixes")
        out = self.path("ok.h5")
        rc, msg = run_import([self.path("model.safetensors"), "--heads", "4", "--prefix",
                              "teacher.", "-o", out])
        self.assertEqual(rc, 0, msg)
        self.assertEqual(self.imported(out)[6]["prefix"], "teacher.")
        self.expect_bad([self.path("model.safetensors"), "--heads", "0"], "--heads")
        self.expect_bad([self.path("model.safetensors"), "--model", "llama"], "--model llama")
        self.expect_bad([self.path("model.safetensors"), "--heads", "4", "--prefix",
                         "teacher.", "--layers", "5"], "layer 5 does not exist")
        rc, msg = run_import([self.path("model.safetensors")])
        self.assertEqual(rc, 2, msg)
        self.assertIn("missing -o", msg)


if __name__ == "__main__":
    unittest.main(verbosity=2)
