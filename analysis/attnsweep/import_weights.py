"""attnsweep import-weights: the attention heads of a checkpoint -> an attnsweep matrix file.

usage: attnsweep import-weights CHECKPOINT -o OUT.h5 [--model NAME] [--heads H]
           [--config CONFIG.json] [--prefix P] [--layers LIST] [--stack-heads]
           [--names ROLE=TEMPLATE,...] [--orient linear|conv1d] [--fused blocks|heads]
           [--scale sqrt|none] [--rotary] [--dense]

CHECKPOINT is a safetensors file, a directory holding model.safetensors (or a sharded
model.safetensors.index.json), or such an index file. Tensors are read with numpy only (the
safetensors format: an 8-byte little-endian header length, a JSON header giving each tensor's
dtype, shape and byte range, then the raw little-endian data); F64, F32, F16 and BF16 are read.
Pickle checkpoints (pytorch_model.bin, *.pt) are never unpickled: exit 2 with a conversion hint.

For every layer l and head h it writes one triple (index l * H + h) in the row-vector
convention of the model (q = x W_Q, W_Q^h the d x d_k columns of head h):
    Q_h = (W_Q^h)^T, K_h = (W_K^h)^T   (d_k x d)      M_h = mscale Q_h^T K_h, mscale = 1/sqrt(d_k)
    V_h = (W_V^h W_O^h)^T              (d x d, rank <= d_k; W_O^h the d_k rows of head h)
(grouped-query attention: head h reads key/value head h // (H / H_kv); T5: mscale = 1).
V_h is stored as its factors VL_h = (W_O^h)^T and VR_h = (W_V^h)^T, and Q, K, VL, VR keep the
checkpoint's precision (the file is no larger than the attention's share of the checkpoint);
readers expand V = VL VR. --dense stores V itself in float64 (the older layout).
With --stack-heads one item per layer holds its H heads ([k][H][...]), which `heads: H` sweeps
as one multi-head trial. Biases are ignored. docs/weights.md lists the tensor names per model.

--model      bert, vit, albert, distilbert, gpt2, neox, llama, t5; omitted: detected from the
             tensor names (exactly one convention must match)
--heads      number of (query) heads; default: num_attention_heads, n_head, n_heads or num_heads
             of CONFIG.json, by default config.json beside the checkpoint
--prefix     the name prefix before the convention's names (e.g. "bert."); default: found
--layers     stored layers to import, e.g. 0,3,5-7 (default all)
--names      any other layout: q=T,k=T,v=T,o=T or qkv=T,o=T, T a tensor name with {l} for the
             layer (e.g. q=blocks.{l}.attn.wq.weight); --orient (default linear: nn.Linear
             [out, in]), --fused (qkv split: blocks = q|k|v, heads = per head q,k,v),
             --scale (default sqrt: 1/sqrt(d_k)), --rotary (the model rotates q and k)

Exit codes: 0 done; 2 bad input (arguments, unreadable layout, a missing tensor, a shape that
does not divide into heads; the message names the file and tensor); 3 I/O failure or missing
modules.
"""

import math
import os
import re
import sys
import tempfile
from typing import Any, Dict, List, Optional, Set, Tuple

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - environment problem
    print("attnsweep import-weights: numpy is not available (%s); install python3-numpy" % e,
          file=sys.stderr)
    sys.exit(3)

from .checkpoint import (MAX_DIM, MAX_HEADER, MAX_JSON_DEPTH, MAX_LAYERS, PROG, WMAX, BadInput,
                         Checkpoint, Entry, IOFailure, is_int, json_depth, load_json,
                         read_header, read_json_file, sniff_foreign)

#: the command's entry points and, for code that imported the single script, what
#: checkpoint.py now holds
__all__ = ["main", "run", "parse_args", "LAYOUTS", "MODELS", "MAX_DIM", "MAX_HEADER",
           "MAX_JSON_DEPTH", "MAX_LAYERS", "PROG", "WMAX", "BadInput", "Checkpoint", "Entry",
           "IOFailure", "is_int", "json_depth", "load_json", "read_header", "read_json_file",
           "sniff_foreign"]

# One entry per model: the tensors of one stored layer ({l}: layer index; ALBERT: {g} group,
# {i} layer inside the group) and their orientation. "linear": nn.Linear, stored [out, in],
# y = x W^T. "conv1d": GPT-2's Conv1D, stored [in, out], y = x W. "qkv": one fused tensor;
# fused "blocks": the query, key and value features in three blocks of A (GPT-2); "heads": per
# head its query, key and value features in turn (GPT-NeoX: view [H, 3, d_k]). scale: "sqrt"
# for scores q k^T / sqrt(d_k), "none" for q k^T (T5). position: how the model adds positions
# (recorded, and said by the census): "absolute" (added to the tokens before layer 0),
# "rotary" (q and k rotated by the position: M depends on the relative position),
# "relative_bias" (a learned bias added to the scores, outside M).

LAYOUTS = {
    "bert": {
        "orient": "linear", "position": "absolute",
        "q": "encoder.layer.{l}.attention.self.query.weight",
        "k": "encoder.layer.{l}.attention.self.key.weight",
        "v": "encoder.layer.{l}.attention.self.value.weight",
        "o": "encoder.layer.{l}.attention.output.dense.weight",
    },
    "vit": {
        "orient": "linear", "position": "absolute",
        "q": "encoder.layer.{l}.attention.attention.query.weight",
        "k": "encoder.layer.{l}.attention.attention.key.weight",
        "v": "encoder.layer.{l}.attention.attention.value.weight",
        "o": "encoder.layer.{l}.attention.output.dense.weight",
    },
    "albert": {
        "orient": "linear", "position": "absolute",
        "q": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.query.weight",
        "k": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.key.weight",
        "v": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.value.weight",
        "o": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.dense.weight",
    },
    "distilbert": {
        "orient": "linear", "position": "absolute",
        "q": "transformer.layer.{l}.attention.q_lin.weight",
        "k": "transformer.layer.{l}.attention.k_lin.weight",
        "v": "transformer.layer.{l}.attention.v_lin.weight",
        "o": "transformer.layer.{l}.attention.out_lin.weight",
    },
    "gpt2": {
        "orient": "conv1d", "position": "absolute", "fused": "blocks",
        "qkv": "h.{l}.attn.c_attn.weight",
        "o": "h.{l}.attn.c_proj.weight",
    },
    "neox": {
        "orient": "linear", "position": "rotary", "fused": "heads",
        "qkv": "layers.{l}.attention.query_key_value.weight",
        "o": "layers.{l}.attention.dense.weight",
    },
    "llama": {  # also Mistral, Qwen2, Gemma: grouped-query attention
        "orient": "linear", "position": "rotary",
        "q": "layers.{l}.self_attn.q_proj.weight",
        "k": "layers.{l}.self_attn.k_proj.weight",
        "v": "layers.{l}.self_attn.v_proj.weight",
        "o": "layers.{l}.self_attn.o_proj.weight",
    },
    "t5": {  # the encoder's self-attention (--prefix decoder. for the decoder's)
        "orient": "linear", "position": "relative_bias", "scale": "none",
        "prefer_prefix": "encoder.",
        "q": "block.{l}.layer.0.SelfAttention.q.weight",
        "k": "block.{l}.layer.0.SelfAttention.k.weight",
        "v": "block.{l}.layer.0.SelfAttention.v.weight",
        "o": "block.{l}.layer.0.SelfAttention.o.weight",
    },
}
MODELS = sorted(LAYOUTS)
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
POSITION_TEXT = {
    "absolute": "absolute (added to the tokens before the first layer): M_h is the layer's",
    "rotary": ("rotary: the model rotates q and k by their positions, so its score matrix is "
               "W_Q^h R(j - i) (W_K^h)^T and depends on the relative position j - i; M_h here "
               "is the position-free one (j - i = 0)"),
    "relative_bias": ("relative bias: a learned bias of the relative position is added to the "
                      "scores, outside M_h"),
    "unknown": "not stated (--names)",
}


def key_template(layout: Dict[str, Any]) -> str:
    """The template whose presence defines a layer (the query or the fused tensor)."""
    return layout.get("q") or layout["qkv"]


def template_regex(template: str) -> Any:
    """Regex for PREFIX + template; groups: the prefix, then the indices in template order."""
    parts = re.split(r"(\{[a-z]\})", template)
    body = "".join(r"(\d+)" if re.fullmatch(r"\{[a-z]\}", p) else re.escape(p)
                   for p in parts)
    return re.compile(r"^((?:.+\.)?)" + body + "$"), re.findall(r"\{([a-z])\}", template)


def find_layers(ck: Checkpoint, layout: Dict[str, Any],
                prefix: Optional[str]) -> Dict[str, List[Tuple[int, ...]]]:
    """{prefix: sorted index tuples} of the layers named like the layout's key template."""
    rx, _ = template_regex(key_template(layout))
    found: Dict[str, Set[Tuple[int, ...]]] = {}
    for name in ck.names():
        m = rx.match(name)
        if m and (prefix is None or m.group(1) == prefix):
            found.setdefault(m.group(1), set()).add(tuple(int(x) for x in m.groups()[1:]))
    return {p: sorted(v) for p, v in found.items()}


def detect(ck: Checkpoint, prefix: Optional[str]) -> str:
    """The one convention whose key tensors are present, or BadInput."""
    hits = [m for m in MODELS if find_layers(ck, LAYOUTS[m], prefix)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise BadInput("%s: tensors of several layouts (%s) are present; choose one with --model"
                       % (ck.arg, ", ".join(hits)))
    sample = sorted(ck.names())[:5]
    raise BadInput("%s: unknown layout: no tensor is named like %s; the checkpoint holds e.g. %s "
                   "(docs/weights.md lists the names read; --names names any other layout)" % (
                       ck.arg, " or ".join(key_template(LAYOUTS[m]) for m in MODELS),
                       ", ".join(sample) if sample else "no tensors"))


def layer_grid(ck: Checkpoint, layout: Dict[str, Any], prefix: Optional[str], label: str) -> Any:
    """(prefix, [index tuples of every stored layer]). The layers found must form a full grid
    0..max in every index: a hole is a missing tensor, named. The grid is bounded by the
    tensors found (a name like layer.99999999 with no layers below it is a hole, not a grid
    of 10^8 layers)."""
    found = find_layers(ck, layout, prefix)
    if not found:
        raise BadInput("%s: unknown layout for %s: no tensor is named like %s%s" % (
            ck.arg, label, prefix or "", key_template(layout)))
    if len(found) > 1:
        pre = layout.get("prefer_prefix")
        if prefix is None and pre in found:
            found = {pre: found[pre]}
        else:
            raise BadInput("%s: the %s tensors appear under several prefixes (%s); choose one "
                           "with --prefix" % (ck.arg, label,
                                              ", ".join(repr(p) for p in sorted(found))))
    (pre, idx), = found.items()
    _, keys = template_regex(key_template(layout))
    present = set(idx)
    tops = []
    for j, key in enumerate(keys):
        values = {t[j] for t in idx}
        missing = next(v for v in range(len(values) + 1) if v not in values)
        if missing < max(values):
            example = next(t for t in idx if t[j] > missing)
            hole = example[:j] + (missing,) + example[j + 1:]
            raise BadInput("%s: tensor %s is missing (the checkpoint has %s; layer numbers "
                           "must run from 0 without holes)" % (
                               ck.arg, tensor_name(layout, key_role(layout), pre, keys, hole),
                               tensor_name(layout, key_role(layout), pre, keys, example)))
        tops.append(max(values) + 1)
    if math.prod(tops) > MAX_LAYERS:
        raise BadInput("%s: %d stored layers; at most %d are read" % (ck.arg, math.prod(tops),
                                                                        MAX_LAYERS))
    grid: List[Tuple[int, ...]] = [()]
    for top in tops:
        grid = [g + (v,) for g in grid for v in range(top)]
    for g in grid:
        if g not in present:
            raise BadInput("%s: tensor %s is missing" % (
                ck.arg, tensor_name(layout, key_role(layout), pre, keys, g)))
    return pre, grid


def key_role(layout: Dict[str, Any]) -> str:
    return "q" if "q" in layout else "qkv"


def tensor_name(layout: Dict[str, Any], role: str, prefix: str, keys: Any, idx: Any) -> str:
    return prefix + layout[role].format(**dict(zip(keys, idx)))


def need(ck: Checkpoint, name: str) -> Any:
    if name not in ck.entries:
        raise BadInput("%s: tensor %s is missing" % (ck.arg, name))
    s = ck.shape(name)
    if len(s) == 2 and 0 in s:
        raise BadInput("%s: tensor %s has shape %s: a zero dimension" % (ck.arg, name, list(s)))
    return s


class Plan:
    """One stored layer: tensor names, d, the query width A (= H d_k) and key/value heads."""

    def __init__(self, names: Dict[str, Any], d: int, A: int, hkv: int) -> None:
        self.names, self.d, self.A, self.hkv = names, d, A, hkv


def plan_layer(ck: Checkpoint, layout: Dict[str, Any], prefix: str, keys: Any, idx: Any,
                 heads: int) -> "Plan":
    """Names, shapes and the head split of one stored layer, from the header alone."""
    names = {r: tensor_name(layout, r, prefix, keys, idx) for r in ("q", "k", "v", "o", "qkv")
             if r in layout}
    conv = layout["orient"] == "conv1d"
    if "qkv" in names:  # fused: q, k and v of the same width A
        s = need(ck, names["qkv"])
        shape_text = "[d, 3 A]" if conv else "[3 A, d]"
        if len(s) != 2 or s[1 if conv else 0] % 3 != 0:
            raise BadInput("%s: tensor %s has shape %s; expected %s (query, key, value)"
                           % (ck.arg, names["qkv"], list(s), shape_text))
        d, A = (s[0], s[1] // 3) if conv else (s[1], s[0] // 3)
        akv = A
    else:
        s = need(ck, names["q"])
        if len(s) != 2:
            raise BadInput("%s: tensor %s has shape %s; expected %s" % (
                ck.arg, names["q"], list(s), "[d, A]" if conv else "[A, d]"))
        d, A = (s[0], s[1]) if conv else (s[1], s[0])
        sk = need(ck, names["k"])
        akv = sk[1] if conv else sk[0]
        want = (d, akv) if conv else (akv, d)
        if len(sk) != 2 or tuple(sk) != want:
            raise BadInput("%s: tensor %s has shape %s; expected its input size %d like %s"
                           % (ck.arg, names["k"], list(sk), d, names["q"]))
        sv = need(ck, names["v"])
        if tuple(sv) != tuple(sk):
            raise BadInput("%s: tensor %s has shape %s; expected %s like %s" % (
                ck.arg, names["v"], list(sv), list(sk), names["k"]))
    what = names.get("qkv", names.get("q"))
    if d > MAX_DIM or A > MAX_DIM * 64:
        raise BadInput("%s: tensor %s: d = %d, width %d: too large" % (ck.arg, what, d, A))
    if A % heads != 0 or A == 0:
        raise BadInput("%s: tensor %s: its %d query features do not divide into %d heads" % (
            ck.arg, what, A, heads))
    dk = A // heads
    if akv % dk != 0 or heads % (akv // dk) != 0:
        raise BadInput("%s: tensor %s: its %d key features are not a number of heads of d_k = "
                       "%d that divides the %d query heads" % (ck.arg, names["k"], akv, dk,
                                                               heads))
    hkv = akv // dk
    o = need(ck, names["o"])
    want = (A, d) if conv else (d, A)
    if tuple(o) != want:
        raise BadInput("%s: tensor %s has shape %s; expected %s (%s of the %d head features)"
                       % (ck.arg, names["o"], list(o), list(want),
                          "Conv1D [in, out]" if conv else "nn.Linear [out, in]", A))
    return Plan(names, d, A, hkv)


def row_form(ck: Checkpoint, layout: Dict[str, Any], plan: "Plan", heads: int) -> Any:
    """W_Q (d x A), W_K, W_V (d x A_kv) and W_O (A x d) in the row-vector convention y = x W."""
    names, A = plan.names, plan.A
    conv = layout["orient"] == "conv1d"
    if "qkv" in names:
        w = ck.read(names["qkv"])
        w = w if conv else w.T  # d x 3A
        if layout.get("fused", "blocks") == "blocks":
            wq, wk, wv = w[:, :A], w[:, A:2 * A], w[:, 2 * A:]
        else:  # per head: q, k, v of d_k columns each
            dk = A // heads
            w3 = w.reshape(w.shape[0], heads, 3, dk)
            wq, wk, wv = (w3[:, :, p, :].reshape(w.shape[0], A) for p in range(3))
    else:
        wq, wk, wv = (ck.read(names[r]) if conv else ck.read(names[r]).T for r in "qkv")
    wo = ck.read(names["o"])
    wo = wo if conv else wo.T
    return wq, wk, wv, wo


def slice_desc(layout: Dict[str, Any], plan: "Plan", role: str, h: int, heads: int) -> str:
    """Which part of which tensor head h's matrix comes from (stored orientation)."""
    names, A = plan.names, plan.A
    dk = A // heads
    g = h // (heads // plan.hkv)  # the key/value head of query head h
    conv = layout["orient"] == "conv1d"
    if role == "o":
        lo, hi = h * dk, (h + 1) * dk
        return "%s[%d:%d, :]" % (names["o"], lo, hi) if conv else "%s[:, %d:%d]" % (
            names["o"], lo, hi)
    if "qkv" in names:
        p = "qkv".index(role)
        if layout.get("fused", "blocks") == "blocks":
            lo = p * A + h * dk
        else:
            lo = h * 3 * dk + p * dk
        hi = lo + dk
        return "%s[:, %d:%d]" % (names["qkv"], lo, hi) if conv else "%s[%d:%d, :]" % (
            names["qkv"], lo, hi)
    lo = (h if role == "q" else g) * dk
    hi = lo + dk
    return "%s[:, %d:%d]" % (names[role], lo, hi) if conv else "%s[%d:%d, :]" % (
        names[role], lo, hi)


# ---------------------------------------------------------------- command line

def parse_layers(text: str, count: int) -> List[int]:
    """The layer list text (e.g. 0,3,5-7), every layer below count."""
    out: Set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise BadInput("--layers %s: expected a list like 0,3,5-7" % text)
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise BadInput("--layers %s: range %d-%d is empty" % (text, a, b))
        if b >= count:
            raise BadInput("--layers: layer %d does not exist (the checkpoint stores %d)"
                           % (b if a < count else a, count))
        out.update(range(a, b + 1))
    return sorted(out)


def parse_names(text: str, orient: str, fused: Any) -> Dict[str, Any]:
    """--names q=T,k=T,v=T,o=T | qkv=T,o=T -> a layout."""
    layout = {"orient": orient, "fused": fused, "position": "unknown"}
    for part in text.split(","):
        role, eq, tmpl = part.partition("=")
        role, tmpl = role.strip(), tmpl.strip()
        if not eq or role not in ("q", "k", "v", "o", "qkv") or not tmpl:
            raise BadInput("--names %s: expected q=T,k=T,v=T,o=T or qkv=T,o=T (T a tensor name "
                           "with {l} for the layer), not '%s'" % (text, part))
        if role in layout:
            raise BadInput("--names %s: %s is named twice" % (text, role))
        if re.sub(r"\{[a-z]\}", "", tmpl).count("{") or re.sub(r"\{[a-z]\}", "",
                                                               tmpl).count("}"):
            raise BadInput("--names %s: %s: only {l} (or another single letter) may stand in "
                           "braces" % (text, tmpl))
        layout[role] = tmpl
    roles = {r for r in ("q", "k", "v", "o", "qkv") if r in layout}
    if roles not in ({"q", "k", "v", "o"}, {"qkv", "o"}):
        raise BadInput("--names %s: name q, k, v and o, or qkv and o (named: %s)"
                       % (text, ", ".join(sorted(roles))))
    keys = {r: re.findall(r"\{([a-z])\}", layout[r]) for r in roles}
    first = keys[key_role(layout)]
    if not first or any(sorted(k) != sorted(first) for k in keys.values()):
        raise BadInput("--names %s: every template needs the same layer field, e.g. {l}" % text)
    return layout


OPTS = ("-o", "--output", "--model", "--heads", "--config", "--prefix", "--layers", "--names",
        "--orient", "--fused", "--scale")
FLAGS = ("--stack-heads", "--rotary", "--dense")


def parse_args(argv: List[str]) -> Dict[str, Any]:
    opts: Dict[str, Any] = {"out": None, "model": None, "heads": None, "config": None, "prefix": None,
            "layers": None, "ckpt": None, "names": None, "orient": None, "fused": None,
            "scale": None, "stack-heads": False, "rotary": False, "dense": False}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a in OPTS:
            if not args:
                raise BadInput("%s needs a value" % a)
            v = args.pop(0)
            key = "out" if a in ("-o", "--output") else a[2:]
            if opts[key] is not None:
                raise BadInput("%s is given twice" % a)
            opts[key] = v
        elif a in FLAGS:
            opts[a[2:]] = True
        elif a.startswith("-") and a != "-":
            raise BadInput("unknown option '%s'" % a)
        elif opts["ckpt"] is None:
            opts["ckpt"] = a
        else:
            raise BadInput("more than one CHECKPOINT ('%s', '%s')" % (opts["ckpt"], a))
    if opts["ckpt"] is None:
        raise BadInput("missing CHECKPOINT")
    if opts["out"] is None:
        raise BadInput("missing -o OUT.h5")
    if opts["model"] is not None and opts["model"] not in LAYOUTS:
        raise BadInput("--model %s: expected one of %s (or --names for another layout)"
                       % (opts["model"], ", ".join(MODELS)))
    if opts["names"] is not None and opts["model"] is not None:
        raise BadInput("--names and --model exclude each other")
    for key, allowed in (("orient", ("linear", "conv1d")), ("fused", ("blocks", "heads")),
                         ("scale", ("sqrt", "none"))):
        if opts[key] is not None and opts[key] not in allowed:
            raise BadInput("--%s %s: expected %s" % (key, opts[key], " or ".join(allowed)))
        if opts[key] is not None and opts["names"] is None and key != "scale":
            raise BadInput("--%s goes with --names" % key)
    if opts["rotary"] and opts["names"] is None:
        raise BadInput("--rotary goes with --names")
    if opts["heads"] is not None:
        if not re.fullmatch(r"[1-9][0-9]{0,5}", opts["heads"]):
            raise BadInput("--heads %s: expected a positive integer" % opts["heads"])
        opts["heads"] = int(opts["heads"])
    return opts


def read_config(opts: Dict[str, Any], ck: Checkpoint) -> Tuple[Dict[str, Any], Optional[str]]:
    """The checkpoint's config.json as a dict ({} when there is none and none was named)."""
    path = opts["config"] or os.path.join(ck.dir, "config.json")
    if not os.path.exists(path):
        if opts["config"]:
            raise BadInput("--config %s: no such file" % path)
        return {}, None
    cfg = read_json_file(path, "the config")
    if not isinstance(cfg, dict):
        raise BadInput("%s: not a JSON object" % path)
    return cfg, path


def num_heads(opts: Dict[str, Any], cfg: Dict[str, Any], cfg_path: Optional[str], ck: Checkpoint
               ) -> int:
    if opts["heads"] is not None:
        return opts["heads"]
    if cfg_path is None:
        raise BadInput("the number of heads is unknown: give --heads H, or put config.json "
                       "beside the checkpoint (looked for %s)" % os.path.join(ck.dir,
                                                                             "config.json"))
    for key in HEAD_KEYS:
        v = cfg.get(key)
        if v is not None:
            if not is_int(v) or not 1 <= v <= 1 << 16:
                raise BadInput("%s: %s = %r is not a positive integer" % (cfg_path, key, v))
            return v
    raise BadInput("%s: none of %s is set; give --heads H" % (cfg_path, ", ".join(HEAD_KEYS)))


ROTARY_OFFSETS = 64  # relative positions -64..64 for the spread of a rotary M


def rotary_setup(cfg: Dict[str, Any], dk: int) -> Any:
    """(base, rotated dims) of rotary embeddings: rope_theta or rotary_emb_base (default
    10000); partial_rotary_factor or rotary_pct (default 1) of d_k, an even number."""
    base = cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0))
    pct = cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 1.0))
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not 1 < base < 1e12:
        base = 10000.0
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 1:
        pct = 1.0
    return float(base), 2 * (int(dk * pct) // 2)


def rotary_spread(q: np.ndarray, k: np.ndarray, base: float, rot: int) -> float:
    """max over 0 < |r| <= ROTARY_OFFSETS of ||Q^T (R(r) - I) K||_F / ||Q^T K||_F: how far
    the score matrix at relative position r is from the position-free one. R(r) rotates the
    pairs (j, j + rot/2), j < rot/2, by r base^(-2j/rot) (the rotate-half form of Hugging
    Face's LLaMA and GPT-NeoX). Computed from the d_k x d_k Gram matrices."""
    G, H = q @ q.T, k @ k.T
    m0 = float(np.sum(G * H))  # ||Q^T K||_F^2 = trace(G H), G and H symmetric
    if rot < 2 or not m0 > 0:
        return 0.0
    half = rot // 2
    freq = base ** (-2.0 * np.arange(half) / rot)
    worst = 0.0
    for r in range(-ROTARY_OFFSETS, ROTARY_OFFSETS + 1):
        if r == 0:
            continue
        A = np.zeros_like(G)  # R(r) - I
        c, s_ = np.cos(r * freq) - 1.0, np.sin(r * freq)
        j = np.arange(half)
        A[j, j], A[j + half, j + half] = c, c
        A[j, j + half], A[j + half, j] = -s_, s_
        worst = max(worst, float(np.sum((A.T @ G @ A) * H)) / m0)
    return math.sqrt(max(worst, 0.0))


def same_file(a: str, b: str) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def fixed(s: str) -> Any:
    """A fixed-length HDF5 string (no global heap: census reads it with a bounded read)."""
    return np.bytes_(s.encode("utf-8"))


def run(opts: Dict[str, Any]) -> None:
    ck = Checkpoint(opts["ckpt"])
    out = opts["out"]
    cfg, cfg_path = read_config(opts, ck)
    for inp in ck.files + ([cfg_path] if cfg_path else []):
        if same_file(out, inp):
            raise BadInput("-o %s is the input %s: an output never replaces an input" % (out,
                                                                                      inp))
    heads = num_heads(opts, cfg, cfg_path, ck)
    if opts["names"] is not None:
        layout = parse_names(opts["names"], opts["orient"] or "linear", opts["fused"] or "blocks")
        if opts["rotary"]:
            layout["position"] = "rotary"
        model, label = "custom", "--names"
    else:
        model = opts["model"] or detect(ck, opts["prefix"])
        layout, label = dict(LAYOUTS[model]), "--model " + model
    if opts["scale"] is not None:
        layout["scale"] = opts["scale"]
    prefix, grid = layer_grid(ck, layout, opts["prefix"], label)
    _, keys = template_regex(key_template(layout))
    # Plan every layer from the header first: a bad tensor stops before anything is written.
    plans = [plan_layer(ck, layout, prefix, keys, idx, heads) for idx in grid]
    p0 = plans[0]
    for p in plans:
        if (p.d, p.A, p.hkv) != (p0.d, p0.A, p0.hkv):
            first = p.names.get("qkv", p.names.get("q"))
            raise BadInput("%s: tensor %s: d = %d, %d head features, %d key/value heads; "
                           "layer 0 has %d, %d, %d" % (ck.arg, first, p.d, p.A, p.hkv, p0.d,
                                                       p0.A, p0.hkv))
    layers = list(range(len(grid)))
    if opts["layers"] is not None:
        layers = parse_layers(opts["layers"], len(grid))
    d, A, hkv = p0.d, p0.A, p0.hkv
    dk = A // heads
    group = heads // hkv
    mscale = 1.0 if layout.get("scale", "sqrt") == "none" else 1.0 / math.sqrt(dk)
    try:
        import h5py
    except ImportError as e:
        raise IOFailure("h5py is not available (%s); install python3-h5py" % e)

    stack = opts["stack-heads"]
    k = len(layers) * heads
    # Compact (default): Q, K and V's factors VL = (W_O^h)^T, VR = (W_V^h)^T in the
    # checkpoint's precision (the widest of the tensors read); --dense: V itself, float64.
    order = ["F16", "BF16", "F32", "F64"]
    widest = max((ck.dtype(n) for li in layers for n in plans[li].names.values()),
                 key=lambda t: order.index(t) if t in order else 3)
    prec = "f8" if opts["dense"] else {"F16": "<f2", "BF16": "<f4", "F32": "<f4"}.get(widest,
                                                                                     "<f8")
    outdir = os.path.dirname(os.path.abspath(out))
    try:  # O_EXCL in the output's directory: a planted link is never followed
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(out) + ".", suffix=".tmp",
                                   dir=outdir)
        os.close(fd)
        mask = os.umask(0o22)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 -> what a plain create would give
    except OSError as e:
        raise IOFailure("%s: cannot create a file in %s: %s" % (out, outdir, e.strerror or e))
    try:
        with h5py.File(tmp, "w", libver="latest") as f:  # checksummed metadata
            g = f.create_group("triples")
            lead = (len(layers), heads) if stack else (k,)
            dq = g.create_dataset("Q", lead + (dk, d), dtype=prec)
            dkk = g.create_dataset("K", lead + (dk, d), dtype=prec)
            if opts["dense"]:
                dv = g.create_dataset("V", lead + (d, d), dtype="f8")
            else:
                dvl = g.create_dataset("VL", lead + (d, dk), dtype=prec)
                dvr = g.create_dataset("VR", lead + (dk, d), dtype=prec)
            rotary = layout.get("position") == "rotary"
            if rotary:
                rbase, rdims = rotary_setup(cfg, dk)
                spread = np.zeros(k)
            lay = np.empty(k, dtype=np.int32)
            hd = np.empty(k, dtype=np.int32)
            tens = []
            t = 0
            for pos, li in enumerate(layers):
                plan = plans[li]
                wq, wk, wv, wo = row_form(ck, layout, plan, heads)
                for h in range(heads):
                    s = slice(h * dk, (h + 1) * dk)
                    sg = slice((h // group) * dk, (h // group + 1) * dk)
                    q, kk, v = wq[:, s].T, wk[:, sg].T, (wv[:, sg] @ wo[s, :]).T
                    for what, a in (("V", v), ("M", mscale * (q.T @ kk))):
                        if not np.all(np.isfinite(a)):
                            raise BadInput("%s: layer %d head %d: %s is not finite (weights "
                                           "too large)" % (ck.arg, li, h, what))
                    at = (pos, h) if stack else t
                    dq[at], dkk[at] = q, kk
                    if opts["dense"]:
                        dv[at] = v
                    else:
                        dvl[at], dvr[at] = wo[s, :].T, wv[:, sg].T
                    lay[t], hd[t] = li, h
                    if rotary:
                        spread[t] = rotary_spread(q, kk, rbase, rdims)
                    tens.append([slice_desc(layout, plan, r, h, heads) for r in "qkvo"])
                    t += 1
            if stack:
                g["layer"] = np.asarray(layers, dtype=np.int32)  # heads: 0..H-1 in order
            else:
                g["layer"] = lay
                g["head"] = hd
            if rotary:
                ds = g.create_dataset("rotary_spread", data=spread.reshape(lead))
                ds.attrs["offsets"] = ROTARY_OFFSETS
                ds.attrs["base"] = rbase
                ds.attrs["dims"] = rdims
                ds.attrs["meaning"] = fixed(
                    "max over 0 < |r| <= offsets of ||M(r) - M(0)||_F / ||M(0)||_F, M(r) = "
                    "mscale W_Q^h R(r) (W_K^h)^T, R(r) rotating the pairs (j, j + dims/2) of "
                    "the head's features by r base^(-2j/dims)")
            tarr = np.array([[x.encode("utf-8") for x in row] for row in tens], dtype="S")
            ts = g.create_dataset("tensors", data=tarr.reshape(lead + (4,)))
            ts.attrs["columns"] = fixed("query key value output")
            a = g.attrs
            a["mscale"] = mscale
            a["model"] = fixed(model)
            a["checkpoint"] = fixed(os.path.abspath(opts["ckpt"]))
            a["prefix"] = fixed(prefix)
            a["num_heads"] = heads
            a["num_kv_heads"] = hkv
            a["num_layers"] = len(grid)
            a["d"] = d
            a["d_k"] = dk
            a["stacked"] = int(stack)
            a["storage"] = fixed("dense" if opts["dense"] else "factored")
            a["position"] = fixed(layout.get("position", "unknown"))
            a["position_note"] = fixed(POSITION_TEXT[layout.get("position", "unknown")])
            a["biases"] = fixed("ignored")
            a["convention"] = fixed(
                "row vectors q = x W_Q; Q_h = (W_Q^h)^T, K_h = (W_K^{g(h)})^T (d_k x d), g(h) = "
                "h // (num_heads / num_kv_heads); M_h = mscale Q_h^T K_h, mscale = %s; "
                "V_h = (W_V^{g(h)} W_O^h)^T (d x d)%s" % (
                    "1" if mscale == 1.0 else "1/sqrt(d_k)", "" if opts["dense"] else
                    ", stored as VL_h = (W_O^h)^T (d x d_k) and VR_h = (W_V^{g(h)})^T "
                    "(d_k x d), V_h = VL_h VR_h"))
            if opts["names"] is not None:
                a["names"] = fixed(opts["names"])
            if cfg_path:
                a["config"] = fixed(os.path.abspath(cfg_path))
                for key in ("model_type", "num_hidden_layers", "num_hidden_groups",
                            "inner_group_num", "embedding_size", "hidden_size"):
                    v = cfg.get(key)
                    if is_int(v) and abs(v) < 1 << 62:
                        a["config_" + key] = v
                    elif isinstance(v, str) and len(v) < 256:
                        a["config_" + key] = fixed(v)
            if model == "albert":
                a["albert_inner_group_num"] = max(i for _, i in grid) + 1
        os.replace(tmp, out)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise IOFailure("%s: cannot write: %s" % (out, e.strerror or e))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    kv = "" if hkv == heads else " (%d key/value heads)" % hkv
    print("%s: %s, %d layer%s x %d heads%s (d = %d, d_k = %d, mscale = %s) -> %s: %d %s" % (
        PROG, model, len(layers), "" if len(layers) == 1 else "s", heads, kv, d, dk,
        "1" if mscale == 1.0 else "1/sqrt(%d)" % dk, out,
        len(layers) if stack else k, "layers of %d heads (sweep with heads: %d)" % (heads, heads)
        if stack else "triples"), file=sys.stderr)
    if layout.get("position") == "rotary":
        print("%s: positions are rotary: M_h written is the position-free one (relative "
              "position 0); the model's scores at relative position r use W_Q R(r) W_K^T"
              % PROG, file=sys.stderr)


def main(argv: List[str]) -> int:
    try:
        run(parse_args(argv))
    except BadInput as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    except IOFailure as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 3
    except MemoryError:
        print("%s: out of memory" % PROG, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

