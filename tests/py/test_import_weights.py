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

def value_matrices(g):
    """V of a triples group, dense or stored as its factors (V = VL VR), in float64."""
    if "V" in g:
        return g["V"][...].astype(np.float64)
    return np.matmul(g["VL"][...].astype(np.float64), g["VR"][...].astype(np.float64))


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
            attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in g.attrs.items()}
            return (g["Q"][...].astype(np.float64), g["K"][...].astype(np.float64),
                    value_matrices(g), float(g.attrs["mscale"]),
                    g["layer"][...], g["head"][...], attrs,
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
        self.expect_bad([self.path("model.safetensors")], "none of num_attention_heads, n_head")

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
        self.expect_bad([self.path("model.safetensors"), "--model", "opt"], "--model opt")
        self.expect_bad([self.path("model.safetensors"), "--heads", "4", "--prefix",
                         "teacher.", "--layers", "5"], "layer 5 does not exist")
        rc, msg = run_import([self.path("model.safetensors")])
        self.assertEqual(rc, 2, msg)
        self.assertIn("missing -o", msg)


# ---------------------------------------------------------------- layouts of issue 35
#
# Each layout's attention is written here as its reference implementation computes it
# (Hugging Face: LlamaAttention with repeat_kv, GPTNeoXAttention's per-head fused split,
# T5Attention without the 1/sqrt(d_k), DistilBERT's MultiHeadSelfAttention), positions left
# out (rotary at relative position 0). Per head: its scores, its value-output path (its value
# features alone through the output projection), and the layer's whole output.

def softmax_rows(s):
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def per_head_attention(q, k, v, proj, heads, kv_heads, scale):
    """q: n x (heads d_k), k, v: n x (kv_heads d_k); head h attends with key/value head
    h // (heads / kv_heads) (repeat_kv). Returns ([scores_h], [value-output_h], output)."""
    n, dk = q.shape[0], q.shape[1] // heads
    q3 = q.reshape(n, heads, dk)
    rep = heads // kv_heads
    k3 = np.repeat(k.reshape(n, kv_heads, dk), rep, axis=1)
    v3 = np.repeat(v.reshape(n, kv_heads, dk), rep, axis=1)
    scores, vo, ctx = [], [], np.zeros((n, heads, dk))
    for h in range(heads):
        sc = q3[:, h] @ k3[:, h].T * scale
        scores.append(sc)
        alone = np.zeros((n, heads, dk))
        alone[:, h] = v3[:, h]
        vo.append(proj(alone.reshape(n, heads * dk)))
        ctx[:, h] = softmax_rows(sc) @ v3[:, h]
    return scores, vo, proj(ctx.reshape(n, heads * dk))


def llama_like(rng, layers, d, heads, kv_heads, dk):
    t = {"model.embed_tokens.weight": lin(rng, 100, d), "lm_head.weight": lin(rng, 100, d)}
    for l in range(layers):
        p = "model.layers.%d." % l
        t[p + "self_attn.q_proj.weight"] = lin(rng, heads * dk, d)
        t[p + "self_attn.k_proj.weight"] = lin(rng, kv_heads * dk, d)
        t[p + "self_attn.v_proj.weight"] = lin(rng, kv_heads * dk, d)
        t[p + "self_attn.o_proj.weight"] = lin(rng, d, heads * dk)
        t[p + "mlp.gate_proj.weight"] = lin(rng, 2 * d, d)
        t[p + "input_layernorm.weight"] = np.ones(d)
    return t


def llama_ref(w, l, heads, kv_heads):
    p = "model.layers.%d.self_attn." % l
    wq, wk, wv, wo = (w[p + r + "_proj.weight"] for r in "qkvo")
    dk = wq.shape[0] // heads
    return lambda X: per_head_attention(X @ wq.T, X @ wk.T, X @ wv.T, lambda c: c @ wo.T,
                                        heads, kv_heads, 1 / np.sqrt(dk))


def neox_like(rng, layers, d):
    t = {"gpt_neox.embed_in.weight": lin(rng, 100, d), "embed_out.weight": lin(rng, 100, d)}
    for l in range(layers):
        p = "gpt_neox.layers.%d." % l
        t[p + "attention.query_key_value.weight"] = lin(rng, 3 * d, d)
        t[p + "attention.query_key_value.bias"] = np.zeros(3 * d)
        t[p + "attention.dense.weight"] = lin(rng, d, d)
        t[p + "mlp.dense_h_to_4h.weight"] = lin(rng, 4 * d, d)
    return t


def neox_ref(w, l, heads):
    p = "gpt_neox.layers.%d.attention." % l
    wqkv, wd = w[p + "query_key_value.weight"], w[p + "dense.weight"]
    dk = wqkv.shape[0] // 3 // heads

    def f(X):  # qkv viewed as [n, heads, 3 d_k]: per head its query, key, value in turn
        y = (X @ wqkv.T).reshape(X.shape[0], heads, 3 * dk)
        q, k, v = (y[:, :, i * dk:(i + 1) * dk].reshape(X.shape[0], -1) for i in range(3))
        return per_head_attention(q, k, v, lambda c: c @ wd.T, heads, heads, 1 / np.sqrt(dk))
    return f


def t5_like(rng, layers, d, heads, dkv):
    t = {"shared.weight": lin(rng, 100, d)}
    for side in ("encoder", "decoder"):
        for l in range(layers):
            p = "%s.block.%d.layer.0.SelfAttention." % (side, l)
            for r in "qkv":
                t[p + r + ".weight"] = lin(rng, heads * dkv, d)
            t[p + "o.weight"] = lin(rng, d, heads * dkv)
            if l == 0:
                t[p + "relative_attention_bias.weight"] = lin(rng, 32, heads)
        t["%s.final_layer_norm.weight" % side] = np.ones(d)
    return t


def t5_ref(w, side, l, heads):
    p = "%s.block.%d.layer.0.SelfAttention." % (side, l)
    wq, wk, wv, wo = (w[p + r + ".weight"] for r in "qkvo")
    return lambda X: per_head_attention(X @ wq.T, X @ wk.T, X @ wv.T, lambda c: c @ wo.T,
                                        heads, heads, 1.0)  # T5: no 1/sqrt(d_k)


def distilbert_like(rng, layers, d):
    t = {"distilbert.embeddings.word_embeddings.weight": lin(rng, 100, d)}
    for l in range(layers):
        p = "distilbert.transformer.layer.%d." % l
        for r in ("q_lin", "k_lin", "v_lin", "out_lin"):
            t[p + "attention.%s.weight" % r] = lin(rng, d, d)
            t[p + "attention.%s.bias" % r] = np.zeros(d)
        t[p + "ffn.lin1.weight"] = lin(rng, 4 * d, d)
    return t


def distilbert_ref(w, l, heads):
    p = "distilbert.transformer.layer.%d.attention." % l
    wq, wk, wv, wo = (w[p + r + "_lin.weight"] for r in ("q", "k", "v", "out"))
    dk = wq.shape[0] // heads
    return lambda X: per_head_attention(X @ wq.T, X @ wk.T, X @ wv.T, lambda c: c @ wo.T,
                                        heads, heads, 1 / np.sqrt(dk))


class TestLayouts(ImportCase):
    """LLaMA (grouped-query), GPT-NeoX (fused per head), T5 (no scaling), DistilBERT, and a
    --names template: the imported triples reproduce each layout's attention."""

    def check_refs(self, out, refs, heads, d, dk, mscale, labels=None, stacked=False):
        with h5py.File(out, "r") as f:
            g = f["triples"]
            Q, K, V = g["Q"][...].astype(np.float64), g["K"][...].astype(np.float64), \
                value_matrices(g)
            self.assertAlmostEqual(float(g.attrs["mscale"]), mscale, places=15)
            lay = g["layer"][...]
        if stacked:
            self.assertEqual(Q.shape, (len(refs), heads, dk, d))
            Q, K, V = (a.reshape((-1,) + a.shape[2:]) for a in (Q, K, V))
        self.assertEqual(Q.shape, (len(refs) * heads, dk, d))
        self.assertEqual(V.shape, (len(refs) * heads, d, d))
        X = self.rng.standard_normal((3 * d, d))
        for li, ref in enumerate(refs):
            if labels is not None:
                self.assertEqual(int(lay[li if stacked else li * heads]), labels[li])
            scores, vo, whole = ref(X)
            total = np.zeros_like(whole)
            for h in range(heads):
                t = li * heads + h
                M = mscale * Q[t].T @ K[t]
                got = X @ M @ X.T
                self.assertLess(np.abs(got - scores[h]).max(), 1e-12 * np.abs(scores[h]).max(),
                                "layer %d head %d: scores" % (li, h))
                self.assertLess(np.abs(X @ V[t].T - vo[h]).max(), 1e-12 * np.abs(vo[h]).max(),
                                "layer %d head %d: value-output" % (li, h))
                total += softmax_rows(got) @ X @ V[t].T
            self.assertLess(np.abs(total - whole).max(), 1e-12 * np.abs(whole).max(),
                            "layer %d: attention output" % li)

    def check_rotary_spread(self, out, w, heads, kvh, dk, base):
        """/triples/rotary_spread against RoPE applied to the tokens' q and k as Hugging Face's
        apply_rotary_pos_emb does (rotate_half, inv_freq = base^(-arange(0, dk, 2) / dk)),
        the scores of positions i and i + r turned back into M(r) by least squares."""
        with h5py.File(out, "r") as f:
            spread = f["triples/rotary_spread"][...]
        X = self.rng.standard_normal((60, w["model.layers.0.self_attn.q_proj.weight"].shape[1]))
        Xp = np.linalg.pinv(X)
        inv = base ** (-np.arange(0, dk, 2) / dk)

        def rope(v, pos):  # v: n x dk
            ang = np.concatenate([pos * inv, pos * inv])
            half = np.concatenate([-v[:, dk // 2:], v[:, :dk // 2]], axis=1)
            return v * np.cos(ang) + half * np.sin(ang)
        for t in range(spread.size):
            l, h = divmod(t, heads)
            p = "model.layers.%d.self_attn." % l
            g = h // (heads // kvh)
            q = X @ w[p + "q_proj.weight"][h * dk:(h + 1) * dk].T
            k = X @ w[p + "k_proj.weight"][g * dk:(g + 1) * dk].T
            M = [Xp @ (rope(q, 7.0) @ rope(k, 7.0 + r).T) @ Xp.T for r in range(-64, 65)]
            want = max(np.linalg.norm(m - M[64]) for m in M) / np.linalg.norm(M[64])
            self.assertLess(abs(spread.flat[t] - want), 1e-9 * want, "head %d" % t)

    def test_llama_grouped_query_sharded(self):
        # 4 query heads sharing 2 key/value heads; d_k = 12 (head_dim != d / heads), two
        # shards and their index, named by the index file itself.
        d, heads, kvh, dk = 40, 4, 2, 12
        t = llama_like(self.rng, 2, d, heads, kvh, dk)
        names = sorted(t)
        w = {}
        for part, chunk in enumerate((names[::2], names[1::2])):
            w.update(write_safetensors(self.path("model-%d.safetensors" % part),
                                       {n: t[n] for n in chunk}))
        wm = {n: "model-%d.safetensors" % (i % 2) for i, n in enumerate(names)}
        with open(self.path("model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)
        write_config(self.dir, model_type="llama", num_attention_heads=heads,
                     num_key_value_heads=kvh, head_dim=dk, hidden_size=d, rope_theta=500.0)
        out = self.path("w.h5")
        rc, msg = run_import([self.path("model.safetensors.index.json"), "-o", out])
        self.assertEqual(rc, 0, msg)
        self.assertIn("2 key/value heads", msg)
        self.assertIn("rotary", msg)
        self.check_refs(out, [llama_ref(w, l, heads, kvh) for l in range(2)], heads, d, dk,
                        1 / np.sqrt(dk), labels=[0, 1])
        attrs = self.imported(out)[6]
        self.assertEqual((attrs["model"], attrs["prefix"], attrs["position"]),
                         ("llama", "model.", "rotary"))
        self.assertEqual(int(attrs["num_kv_heads"]), kvh)
        self.check_rotary_spread(out, w, heads, kvh, dk, 500.0)
        self.assertIn("k_proj.weight[0:12, :]", self.imported(out)[7][1][1])  # head 1 -> kv 0
        self.assertIn("k_proj.weight[12:24, :]", self.imported(out)[7][2][1])
        # an index naming a missing shard
        wm[names[0]] = "model-9.safetensors"
        with open(self.path("model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": wm}, f)
        rc, msg = run_import([self.path("model.safetensors.index.json"), "-o", out + "2"])
        self.assertEqual(rc, 2, msg)
        self.assertIn("model-9.safetensors", msg)

    def test_neox_fused_per_head(self):
        d, heads = 48, 4
        w = write_safetensors(self.path("model.safetensors"), neox_like(self.rng, 2, d),
                              dtype="F64")
        write_config(self.dir, model_type="gpt_neox", num_attention_heads=heads)
        out = self.path("w.h5")
        rc, msg = run_import([self.dir, "-o", out])
        self.assertEqual(rc, 0, msg)
        self.check_refs(out, [neox_ref(w, l, heads) for l in range(2)], heads, d, d // heads,
                        1 / np.sqrt(d // heads))
        attrs = self.imported(out)[6]
        self.assertEqual((attrs["model"], attrs["position"]), ("neox", "rotary"))

    def test_t5_unscaled_encoder_and_decoder(self):
        d, heads, dkv = 48, 4, 16  # inner dimension 64 != d
        w = write_safetensors(self.path("model.safetensors"), t5_like(self.rng, 2, d, heads,
                                                                      dkv), dtype="F64")
        write_config(self.dir, model_type="t5", num_heads=heads, d_kv=dkv, d_model=d)
        out = self.path("w.h5")
        rc, msg = run_import([self.dir, "-o", out])  # the encoder by default
        self.assertEqual(rc, 0, msg)
        self.assertIn("mscale = 1)", msg)
        self.check_refs(out, [t5_ref(w, "encoder", l, heads) for l in range(2)], heads, d, dkv,
                        1.0)
        rc, msg = run_import([self.dir, "-o", out, "--prefix", "decoder.", "--layers", "1"])
        self.assertEqual(rc, 0, msg)
        self.check_refs(out, [t5_ref(w, "decoder", 1, heads)], heads, d, dkv, 1.0, labels=[1])
        self.assertEqual(self.imported(out)[6]["position"], "relative_bias")

    def test_distilbert(self):
        d, heads = 32, 2
        w = write_safetensors(self.path("model.safetensors"), distilbert_like(self.rng, 2, d))
        write_config(self.dir, model_type="distilbert", n_heads=heads, dim=d)
        out = self.path("w.h5")
        rc, msg = run_import([self.dir, "-o", out])
        self.assertEqual(rc, 0, msg)
        self.check_refs(out, [distilbert_ref(w, l, heads) for l in range(2)], heads, d,
                        d // heads, 1 / np.sqrt(d // heads))

    def test_names_template(self):
        # An unknown layout: Conv1D-oriented separate q/k/v/o under blocks.{l}.attn.
        d, heads = 24, 3
        t = {}
        for l in range(2):
            for r in "qkvo":
                t["blocks.%d.attn.w%s" % (l, r)] = lin(self.rng, d, d)
        w = write_safetensors(self.path("model.safetensors"), t, dtype="F64")
        out = self.path("w.h5")
        tmpl = "q=blocks.{l}.attn.wq,k=blocks.{l}.attn.wk,v=blocks.{l}.attn.wv,o=blocks.{l}.attn.wo"
        rc, msg = run_import([self.path("model.safetensors"), "-o", out, "--heads", "3",
                              "--names", tmpl, "--orient", "conv1d", "--rotary"])
        self.assertEqual(rc, 0, msg)

        def ref(l):
            wq, wk, wv, wo = (w["blocks.%d.attn.w%s" % (l, r)] for r in "qkvo")
            return lambda X: per_head_attention(X @ wq, X @ wk, X @ wv, lambda c: c @ wo,
                                                heads, heads, 1 / np.sqrt(d // heads))
        self.check_refs(out, [ref(0), ref(1)], heads, d, d // heads, 1 / np.sqrt(d // heads))
        attrs = self.imported(out)[6]
        self.assertEqual((attrs["model"], attrs["position"]), ("custom", "rotary"))
        for bad, needle in (("q=a.{l}", "name q, k, v and o"),
                            ("q=a.{l},k=a.{l},v=a,o=a.{l}", "same layer field"),
                            ("q=a.{l},k={x},v=a.{l},o=a.{l}", "same layer field"),
                            ("q=a.{{l}},k=a.{l},v=a.{l},o=a.{l}", "braces"),
                            ("x=a.{l}", "expected q=T")):
            rc, msg = run_import([self.path("model.safetensors"), "-o", out, "--heads", "3",
                                  "--names", bad])
            self.assertEqual(rc, 2, msg)
            self.assertIn(needle, msg)

    def test_stack_heads(self):
        # One item per layer with a head axis: the same matrices as the per-head file.
        w = write_safetensors(self.path("model.safetensors"), bert_like(self.rng, "", "self"))
        write_config(self.dir, num_attention_heads=H)
        flat, stacked = self.path("flat.h5"), self.path("stacked.h5")
        self.assertEqual(run_import([self.dir, "-o", flat])[0], 0)
        rc, msg = run_import([self.dir, "-o", stacked, "--stack-heads"])
        self.assertEqual(rc, 0, msg)
        self.assertIn("heads: 4", msg)
        with h5py.File(flat, "r") as a, h5py.File(stacked, "r") as b:
            for n in ("Q", "K", "VL", "VR"):
                self.assertEqual(b["triples"][n].shape[:2], (L, H))
                self.assertTrue(np.array_equal(a["triples"][n][...].reshape(
                    b["triples"][n].shape), b["triples"][n][...]))
            self.assertEqual(list(b["triples/layer"][...]), list(range(L)))
            self.assertEqual(int(b["triples"].attrs["stacked"]), 1)
        self.check_against_model("bert", w, "", ["0", "1"], flat)
        if not BIN:
            return
        # `heads: 4` sweeps a whole layer as one trial, reading the stacked file unchanged.
        spec = self.path("layer.yaml")
        with open(spec, "w") as f:
            f.write("name: layer\nseed: 3\nsweep:\n  vfamily: file\n  mfamily: file\n"
                    "  file: %s\n  file_index: [0, 1]\n  heads: %d\n  m_rows: %d\n  d: %d\n"
                    "  n: 8\n  T: 0.5\n  dt: 0.05\n  init: {kind: gauss, scale: 1}\n"
                    % (stacked, H, DK, D))
        res = self.path("layer_out.h5")
        r = subprocess.run([BIN, "run", spec, "-o", res], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with h5py.File(res, "r") as f:
            t = f["trials"][...]
            outcome = h5py.check_enum_dtype(f["trials"].dtype["outcome"])
            self.assertEqual(len(t), 2)
            self.assertEqual(list(t["heads"]), [H, H])
            self.assertNotIn(outcome["failed"], list(t["outcome"]), t["message"])
            self.assertNotIn(outcome["pending"], list(t["outcome"]))
        with open(spec) as f, open(self.path("flat.yaml"), "w") as g:
            g.write(f.read().replace(stacked, flat))
        r = subprocess.run([BIN, "run", self.path("flat.yaml"), "-o", res + "2"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 4, "the per-head file has no head axis: trials fail")
        with h5py.File(res + "2", "r") as f:
            self.assertIn(b"has no head axis", f["trials"]["message"][0])


class TestCompact(ImportCase):
    def test_factored_in_checkpoint_precision(self):
        # V_h as VL_h VR_h and Q, K, VL, VR in the checkpoint's dtype: the data of the file is
        # exactly the attention weights' bytes (GPT-2: c_attn and c_proj), and --dense (V in
        # float64) holds the same triples.
        for dtype, npt, item in (("F32", "<f4", 4), ("F16", "<f2", 2), ("BF16", "<f4", 4)):
            w = write_safetensors(self.path("model.safetensors"), gpt2_like(self.rng, "", d=D),
                                  dtype=dtype)
            write_config(self.dir, n_head=H)
            out, dense = self.path("c.h5"), self.path("d.h5")
            self.assertEqual(run_import([self.dir, "-o", out])[0], 0)
            self.assertEqual(run_import([self.dir, "-o", dense, "--dense"])[0], 0)
            with h5py.File(out, "r") as f:
                g = f["triples"]
                self.assertNotIn("V", g)
                self.assertEqual(g["VL"].shape, (L * H, D, DK))
                self.assertEqual(g["VR"].shape, (L * H, DK, D))
                data = 0
                for n in ("Q", "K", "VL", "VR"):
                    self.assertEqual(g[n].dtype, np.dtype(npt), "%s %s" % (dtype, n))
                    data += g[n].id.get_storage_size()
            share = L * (D * 3 * D + D * D) * item
            self.assertEqual(data, share, "%s: data bytes = the attention weights' bytes" % dtype)
            self.assertLess(os.path.getsize(out), share + 64 * 1024)
            a, b = self.imported(out), self.imported(dense)
            for x, y in zip(a[:3], b[:3]):
                self.assertLess(np.abs(x - y).max(), 1e-15 * np.abs(y).max() + 1e-300)
            self.check_against_model("gpt2", w, "", ["0", "1"], out)


class TestExample(ImportCase):
    def test_train_tiny_albert_without_torch(self):
        # The example (jobs/examples/train_tiny_albert.py) needs PyTorch; without it, it says
        # how to install it and writes nothing (torch hidden here: tests never need it).
        script = os.path.join(SRC, "jobs", "examples", "train_tiny_albert.py")
        code = ("import sys; sys.modules['torch'] = None; sys.argv = [%r, %r]; "
                "exec(compile(open(%r).read(), %r, 'exec'), {'__name__': '__main__'})"
                % (script, self.path("out"), script, script))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("apt-get install python3-torch", r.stderr)
        self.assertFalse(os.path.exists(self.path("out")))


class TestHardening(ImportCase):
    """Issue 36 item 7, 10 and point 5: bad values, shapes, ranges, names and JSON -> exit 2."""

    def small(self, dtype="F32", mutate=None):
        t = bert_like(self.rng, "", "self", layers=1, d=8)
        if mutate:
            mutate(t)
        write_safetensors(self.path("model.safetensors"), t, dtype=dtype)
        write_config(self.dir, num_attention_heads=2)
        return self.path("model.safetensors")

    def raw_header(self, header, data=b""):
        js = json.dumps(header).encode() if not isinstance(header, bytes) else header
        with open(self.path("model.safetensors"), "wb") as f:
            f.write(len(js).to_bytes(8, "little") + js + data)
        return self.path("model.safetensors")

    def expect_bad(self, args, *needles):
        out = self.path("bad.h5")
        rc, msg = run_import(list(args) + ["-o", out])
        self.assertEqual(rc, 2, msg)
        for n in needles:
            self.assertIn(n, msg)
        self.assertNotIn("Traceback", msg)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp" in f], [])
        return msg

    def test_huge_weight(self):
        q = "encoder.layer.0.attention.self.value.weight"

        def big(t):
            t[q] = t[q].copy()
            t[q][1, 2] = 1e200
        self.expect_bad([self.small("F64", big)], q, "(1, 2)", "beyond")

    def test_zero_dimension(self):
        def zero(t):
            for r in ("query", "key", "value"):
                t["encoder.layer.0.attention.self.%s.weight" % r] = np.zeros((8, 0))
            t["encoder.layer.0.attention.output.dense.weight"] = np.zeros((0, 8))
        self.expect_bad([self.small(mutate=zero)], "query.weight", "zero dimension")

    def test_duplicate_names_and_overlaps(self):
        q = "encoder.layer.0.attention.self.query.weight"
        ent = '{"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}'
        js = ('{"%s": %s, "%s": %s}' % (q, ent, q, ent)).encode()
        self.expect_bad([self.raw_header(js, bytes(16)), "--heads", "1"], "appears twice")
        hdr = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
               "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
               "c": {"dtype": "F32", "shape": [True, 2], "data_offsets": [0, 8]}}
        self.expect_bad([self.raw_header(hdr, bytes(16)), "--heads", "1"], "tensor c")
        del hdr["c"]
        self.expect_bad([self.raw_header(hdr, bytes(16)), "--heads", "1"], "a [0, 16]",
                        "b [8, 16]", "overlap")

    def test_far_layer_index(self):
        def far(t):
            for k in [k for k in t if ".layer.0." in k]:
                t[k.replace(".layer.0.", ".layer.99999999999.")] = t[k]
        t0 = __import__("time").monotonic()
        self.expect_bad([self.small(mutate=far)], "encoder.layer.1.attention.self.query.weight "
                        "is missing", "layer.99999999999")
        self.assertLess(__import__("time").monotonic() - t0, 30)
        self.expect_bad([self.small(), "--layers", "0-99999999999"], "does not exist")

    def test_deep_json(self):
        ck = self.small()
        self.expect_bad([self.raw_header(b"[" * 200000 + b"]" * 200000), "--heads", "1"],
                        "nested 200000 deep")
        ck = self.small()
        with open(self.path("config.json"), "w") as f:
            f.write('{"num_attention_heads": 2, "x": ' + "[" * 100000 + "]" * 100000 + "}")
        self.expect_bad([ck], "config.json", "nested")
        with open(self.path("config.json"), "w") as f:
            f.write('{"num_attention_heads": 2, "num_attention_heads": 4}')
        self.expect_bad([ck], "config.json", "twice")

    def test_pickle_checkpoints(self):
        for name, head in (("pytorch_model.bin", b"PK\x03\x04" + bytes(60)),
                           ("model.pt", b"\x80\x02}q\x00." + bytes(60))):
            with open(self.path(name), "wb") as f:
                f.write(head)
            self.expect_bad([self.path(name), "--heads", "1"], "safetensors", "torch.load",
                            "save_file")
        self.expect_bad([self.dir, "--heads", "1"], "pytorch_model.bin", "save_file")

    def test_output_is_an_input(self):
        ck = self.small()
        with open(ck, "rb") as f:
            before = f.read()
        for out in (ck, self.path("config.json")):
            rc, msg = run_import([ck, "-o", out])
            self.assertEqual(rc, 2, msg)
            # the command's own guard (outset.c: -o against its arguments) or the script's
            # (-o against every file it reads, config.json included)
            self.assertRegex(msg, "is the input|over the input")
        os.symlink(ck, self.path("link.h5"))
        rc, msg = run_import([ck, "-o", self.path("link.h5")])
        self.assertEqual(rc, 2, msg)
        with open(ck, "rb") as f:
            self.assertEqual(f.read(), before)


# ---------------------------------------------------------------- fuzzing (bounded in time)

def fuzz_seconds(default):
    try:
        return float(os.environ.get("AS_FUZZ_WEIGHTS_SECONDS", default))
    except ValueError:
        return default


class TestFuzz(ImportCase):
    """Random damage to a safetensors header (in-process, many cases) and to a weights file
    read by `attnsweep census` (subprocesses): only exit 0 or 2 (3 for I/O), no traceback, no
    crash, no hang. Time-bounded like the spec fuzzer: AS_FUZZ_WEIGHTS_SECONDS (default 3 s
    each)."""

    def test_safetensors_header(self):
        import contextlib
        import io
        import time
        sys.path.insert(0, os.path.join(SRC, "analysis"))
        import import_weights as iw
        t = bert_like(self.rng, "", "self", layers=2, d=8)
        write_safetensors(self.path("good.safetensors"), t)
        with open(self.path("good.safetensors"), "rb") as f:
            good = f.read()
        n = int.from_bytes(good[:8], "little")
        header, data = good[8:8 + n], good[8 + n:]
        tokens = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"0", b"-1", b"1e400",
                  b"18446744073709551616", b"true", b"null", b'"F64"', b'"shape"',
                  b'"data_offsets"', b"\\u0000", b'"encoder.layer.7.attention.self.query.weight"']
        ck, out = self.path("model.safetensors"), self.path("fz.h5")
        rnd = np.random.default_rng(int(os.environ.get("AS_FUZZ_SEED", "11")))
        end, runs, codes = time.monotonic() + fuzz_seconds(3), 0, {}
        while time.monotonic() < end:
            h = bytearray(header)
            for _ in range(int(rnd.integers(1, 4))):
                op, pos = int(rnd.integers(0, 5)), int(rnd.integers(0, len(h)))
                if op == 0:
                    h[pos] = int(rnd.integers(0, 256))
                elif op == 1:
                    h[pos:pos] = tokens[int(rnd.integers(0, len(tokens)))]
                elif op == 2:
                    del h[pos:pos + int(rnd.integers(1, 16))]
                elif op == 3:  # a digit changed: offsets and shapes
                    digits = [i for i, c in enumerate(h) if 48 <= c <= 57]
                    h[digits[int(rnd.integers(0, len(digits)))]] = int(rnd.integers(48, 58))
                else:
                    h[pos:pos] = h[:int(rnd.integers(1, 64))]
            length = len(h) if rnd.random() < 0.9 else int(rnd.integers(0, 1 << 62))
            with open(ck, "wb") as f:
                f.write(length.to_bytes(8, "little") + bytes(h) + data)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                try:
                    rc = iw.main([ck, "--heads", "2", "-o", out])
                except SystemExit as e:
                    rc = e.code
                except Exception as e:  # noqa: BLE001 - the failure this test looks for
                    self.fail("uncaught %r on header %r" % (e, bytes(h)[:200]))
            self.assertIn(rc, (0, 2), err.getvalue())
            if rc == 0:
                with h5py.File(out, "r") as f:
                    for a in (f["triples/Q"][...], f["triples/K"][...],
                              value_matrices(f["triples"])):
                        self.assertTrue(np.isfinite(a).all())
                os.unlink(out)
            codes[rc] = codes.get(rc, 0) + 1
            runs += 1
        print("safetensors header fuzz: %d cases, exit codes %s" % (runs, codes),
              file=sys.stderr)
        self.assertGreater(runs, 10)

    @unittest.skipUnless(BIN, "needs the attnsweep binary (ATTNSWEEP)")
    def test_weights_file_census(self):
        import time
        write_safetensors(self.path("model.safetensors"),
                          bert_like(self.rng, "", "self", layers=1, d=8))
        good = self.path("good.h5")
        rc, msg = run_import([self.path("model.safetensors"), "--heads", "2", "-o", good])
        self.assertEqual(rc, 0, msg)
        with open(good, "rb") as f:
            raw = f.read()
        rnd = np.random.default_rng(int(os.environ.get("AS_FUZZ_SEED", "11")))
        bad = self.path("bad.h5")
        end, runs, codes = time.monotonic() + fuzz_seconds(3), 0, {}
        while time.monotonic() < end or runs < 9:
            b = bytearray(raw)
            op = runs % 3
            if op == 0:  # a few flipped bits
                for _ in range(int(rnd.integers(1, 4))):
                    b[int(rnd.integers(0, len(b)))] ^= 1 << int(rnd.integers(0, 8))
            elif op == 1:  # two bytes zeroed
                p = int(rnd.integers(0, len(b) - 1))
                b[p:p + 2] = b"\0\0"
            else:
                b = b[:int(rnd.integers(0, len(b)))]
            with open(bad, "wb") as f:
                f.write(b)
            r = subprocess.run([BIN, "census", bad, "--csv", "--read-seconds", "10"],
                               capture_output=True, text=True, timeout=120)
            self.assertIn(r.returncode, (0, 2, 3), "census on damaged file (op %d): %s"
                          % (op, r.stderr[-2000:]))
            if r.returncode:
                self.assertIn(bad, r.stderr, "the message names the file")
            codes[r.returncode] = codes.get(r.returncode, 0) + 1
            runs += 1
        print("weights file census fuzz: %d cases, exit codes %s" % (runs, codes),
              file=sys.stderr)


if __name__ == "__main__":
    import optional
    optional.main(verbosity=2)
