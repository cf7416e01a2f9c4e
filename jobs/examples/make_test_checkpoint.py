#!/usr/bin/python3
"""Write a small BERT-style checkpoint (safetensors + config.json) for the imported-heads examples.

usage: /usr/bin/python3 jobs/examples/make_test_checkpoint.py [DIR] [--seed S] [--albert]
       (default DIR: test_checkpoint in the current directory)

DIR/model.safetensors holds a 2-layer, 4-head encoder in d = 64 (d_k = 16) named like a
HuggingFace BertModel checkpoint ("bert." prefix, F32, nn.Linear [out, in] weights with biases,
layer norms, MLP and embeddings beside the attention), DIR/config.json its num_attention_heads.
Nothing is downloaded: the weights are random, but layer 0's heads are built to land in
different cases of the census (row-vector convention: head h maps x to x W_V^h W_O^h):
  head 0  W_O^h = W_V^h^T + noise, W_K^h = W_Q^h + noise: V_h ~ W_V W_V^T (real, positive,
          dominant spectrum) and M_h ~ W_Q W_Q^T (positive margin): a good triple
  head 1  W_O^h = -W_V^h^T: V_h negative semidefinite-like: no positive leading eigenvalue
  head 2  W_O^h = J W_V^h^T with J a rotation by 90 degrees in d_k/2 planes: complex lead
  head 3  as head 0 but W_K^h = -W_Q^h: the margin <Q phi_1, K phi_1> is negative
Layer 1 is plain Gaussian (what an untrained layer looks like). --albert writes the same four
built heads as ALBERT stores them instead: one layer shared by num_hidden_layers = 12
("albert." prefix, encoder.albert_layer_groups.0.albert_layers.0.attention.*, embedding size
16 mapped to d = 64 by encoder.embedding_hidden_mapping_in): 4 triples. Then:
  attnsweep import-weights DIR -o imported_heads.h5     # 8 triples: layer * 4 + head
  attnsweep census imported_heads.h5                     # docs/weights.md shows the table
"""
import json
import os
import sys

import numpy as np

D, H, L = 64, 4, 2


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(tensors[name])),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(len(js).to_bytes(8, "little"))
        f.write(js)
        for b in blobs:
            f.write(b)


def heads_layer0(rng, dk):
    """Row-vector W_Q^h, W_K^h, W_V^h (d x d_k) and W_O^h (d_k x d) of the four built heads."""
    out = []
    J = np.zeros((dk, dk))
    for i in range(0, dk, 2):
        J[i, i + 1], J[i + 1, i] = -1.0, 1.0
    for h in range(H):
        wq = rng.normal(0, 1 / np.sqrt(D), (D, dk))
        wv = rng.normal(0, 1 / np.sqrt(D), (D, dk))
        noise = 0.05 / np.sqrt(D)
        wk = wq + rng.normal(0, noise, (D, dk))
        if h == 1:
            wo = -wv.T
        elif h == 2:
            wo = J @ wv.T
        else:
            wo = wv.T + rng.normal(0, noise, (dk, D))
        if h == 3:
            wk = -wk
        out.append((wq, wk, wv, wo))
    return out


def stack(hs):
    """nn.Linear tensors (query, key, value, output) of the heads hs, [out, in] each.
    nn.Linear computes x W^T: the row-vector W_Q = weight^T, so head h's rows of query.weight
    are (W_Q^h)^T and the output dense's columns of head h are (W_O^h)^T."""
    wq = np.concatenate([h[0] for h in hs], axis=1).T
    wk = np.concatenate([h[1] for h in hs], axis=1).T
    wv = np.concatenate([h[2] for h in hs], axis=1).T
    wo = np.concatenate([h[3] for h in hs], axis=0).T
    return wq, wk, wv, wo


def albert(rng, dk):
    emb = 16
    t = {"albert.embeddings.word_embeddings.weight": rng.normal(0, 0.02, (128, emb)),
         "albert.embeddings.LayerNorm.weight": np.ones(emb),
         "albert.encoder.embedding_hidden_mapping_in.weight": rng.normal(0, 0.02, (D, emb)),
         "albert.encoder.embedding_hidden_mapping_in.bias": np.zeros(D)}
    p = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    for r, w in zip(("query", "key", "value", "dense"), stack(heads_layer0(rng, dk))):
        t[p + "attention.%s.weight" % r] = w
        t[p + "attention.%s.bias" % r] = rng.normal(0, 0.02, D)
    t[p + "attention.LayerNorm.weight"] = np.ones(D)
    t[p + "ffn.weight"] = rng.normal(0, 0.02, (4 * D, D))
    t[p + "ffn_output.weight"] = rng.normal(0, 0.02, (D, 4 * D))
    cfg = {"model_type": "albert", "hidden_size": D, "embedding_size": emb,
           "num_attention_heads": H, "num_hidden_layers": 12, "num_hidden_groups": 1,
           "inner_group_num": 1}
    return t, cfg


def main(argv):
    out, seed, as_albert = "test_checkpoint", 19, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--seed" and args:
            seed = int(args.pop(0))
        elif a == "--albert":
            as_albert = True
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            out = a
    rng = np.random.default_rng(seed)
    dk = D // H
    if as_albert:
        t, cfg = albert(rng, dk)
        return write(out, t, cfg)
    t = {"bert.embeddings.word_embeddings.weight": rng.normal(0, 0.02, (128, D)),
         "bert.embeddings.position_embeddings.weight": rng.normal(0, 0.02, (32, D)),
         "bert.embeddings.LayerNorm.weight": np.ones(D),
         "bert.embeddings.LayerNorm.bias": np.zeros(D)}
    for l in range(L):
        if l == 0:
            hs = heads_layer0(rng, dk)
        else:
            hs = [tuple(rng.normal(0, 1 / np.sqrt(D), s) for s in
                        ((D, dk), (D, dk), (D, dk), (dk, D))) for _ in range(H)]
        wq, wk, wv, wo = stack(hs)
        p = "bert.encoder.layer.%d." % l
        for r, w in (("query", wq), ("key", wk), ("value", wv)):
            t[p + "attention.self.%s.weight" % r] = w
            t[p + "attention.self.%s.bias" % r] = rng.normal(0, 0.02, D)
        t[p + "attention.output.dense.weight"] = wo
        t[p + "attention.output.dense.bias"] = rng.normal(0, 0.02, D)
        t[p + "attention.output.LayerNorm.weight"] = np.ones(D)
        t[p + "intermediate.dense.weight"] = rng.normal(0, 0.02, (4 * D, D))
        t[p + "output.dense.weight"] = rng.normal(0, 0.02, (D, 4 * D))
    return write(out, t, {"model_type": "bert", "hidden_size": D, "num_attention_heads": H,
                          "num_hidden_layers": L})


def write(out, t, cfg):
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), t)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    print("%s: model.safetensors (%d tensors), config.json" % (out, len(t)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
