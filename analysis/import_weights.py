#!/usr/bin/python3
"""attnsweep import-weights: the attention heads of a checkpoint -> an attnsweep matrix file.

usage: attnsweep import-weights CHECKPOINT -o OUT.h5 [--model albert|bert|gpt2|vit]
                                [--heads H] [--config CONFIG.json] [--prefix P] [--layers LIST]

CHECKPOINT is a safetensors file, a directory holding model.safetensors (or a sharded
model.safetensors.index.json), or such an index file. Tensors are read with numpy only (the
safetensors format: an 8-byte little-endian header length, a JSON header giving each tensor's
dtype, shape and byte range, then the raw little-endian data); F64, F32, F16 and BF16 are read.

For every layer l and head h it writes one triple (index l * H + h) in the row-vector
convention of the model (q = x W_Q, W_Q^h the d x d_k columns of head h):
    Q_h = (W_Q^h)^T, K_h = (W_K^h)^T   (d_k x d)      M_h = mscale Q_h^T K_h, mscale = 1/sqrt(d_k)
    V_h = (W_V^h W_O^h)^T              (d x d, rank <= d_k; W_O^h the d_k rows of head h)
Biases are ignored. The layout (docs/matrices.md) is the one `vfamily: file` / `mfamily: file`
read; docs/weights.md lists the tensor names read per model.

--model      the naming convention; omitted: detected from the tensor names (exactly one
             convention must match)
--heads      number of heads; default: num_attention_heads (or n_head) of CONFIG.json, by
             default config.json beside the checkpoint
--prefix     the name prefix before the convention's names (e.g. "bert."); default: found
--layers     stored layers to import, e.g. 0,3,5-7 (default all)

Exit codes: 0 done; 2 bad input (arguments, unreadable layout, a missing tensor, a shape that
does not divide into heads; the message names the tensor); 3 I/O failure or missing modules.
"""

import json
import math
import os
import re
import sys

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - environment problem
    print("attnsweep import-weights: numpy is not available (%s); install python3-numpy" % e,
          file=sys.stderr)
    sys.exit(3)

PROG = "attnsweep import-weights"
MAX_HEADER = 100 << 20  # bytes of JSON header accepted (real headers are a few MB at most)


class BadInput(Exception):
    """Bad input: exit 2 with the message."""


class IOFailure(Exception):
    """An I/O failure on valid input: exit 3 with the message."""


# ---------------------------------------------------------------- safetensors

# Item sizes of the safetensors dtypes (for the byte-range checks), and the numpy little-endian
# types of those that can be read as weights (BF16 is converted by hand).
ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
            "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOATS = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


class Entry:
    """One tensor of a safetensors file: where its bytes are and how to read them."""

    def __init__(self, path, name, dtype, shape, start, end):
        self.path, self.name, self.dtype, self.shape = path, name, dtype, tuple(shape)
        self.start, self.end = start, end  # absolute byte offsets in the file


def read_header(path):
    """The tensors of one safetensors file: {name: Entry}; every range is checked."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise BadInput("%s: not a safetensors file (shorter than its 8-byte header length)"
                               % path)
            n = int.from_bytes(head, "little")
            if n > MAX_HEADER or n > size - 8:
                raise BadInput("%s: not a safetensors file (header length %d, file size %d)"
                               % (path, n, size))
            raw = f.read(n)
    except OSError as e:
        if not os.path.exists(path):
            raise BadInput("%s: no such checkpoint file" % path)
        raise IOFailure("%s: cannot read: %s" % (path, e.strerror or e))
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadInput("%s: the safetensors header is not valid JSON (%s)" % (path, e))
    if not isinstance(header, dict):
        raise BadInput("%s: the safetensors header is not a JSON object" % path)
    base, data = 8 + n, size - 8 - n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        ok = (isinstance(info, dict) and isinstance(info.get("dtype"), str)
              and isinstance(info.get("shape"), list)
              and all(isinstance(s, int) and s >= 0 for s in info["shape"])
              and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2
              and all(isinstance(o, int) for o in info["data_offsets"]))
        if not ok:
            raise BadInput("%s: tensor %s: header entry lacks dtype, shape or data_offsets"
                           % (path, name))
        lo, hi = info["data_offsets"]
        if not 0 <= lo <= hi <= data:
            raise BadInput("%s: tensor %s: data_offsets [%d, %d] outside the %d data bytes"
                           % (path, name, lo, hi, data))
        item = ITEMSIZE.get(info["dtype"])
        if item is not None and hi - lo != item * math.prod(info["shape"]):
            raise BadInput("%s: tensor %s: %d bytes for %s of shape %s" % (
                path, name, hi - lo, info["dtype"], info["shape"]))
        out[name] = Entry(path, name, info["dtype"], info["shape"], base + lo, base + hi)
    return out


class Checkpoint:
    """The tensors of a checkpoint: one safetensors file, or the shards of an index."""

    def __init__(self, arg):
        self.arg, self.entries = arg, {}
        if os.path.isdir(arg):
            single = os.path.join(arg, "model.safetensors")
            index = os.path.join(arg, "model.safetensors.index.json")
            if os.path.exists(single):
                files = [single]
            elif os.path.exists(index):
                files = self._shards(index)
            else:
                raise BadInput("%s: a directory without model.safetensors or "
                               "model.safetensors.index.json" % arg)
            self.dir = arg
        elif arg.endswith(".json"):
            files, self.dir = self._shards(arg), os.path.dirname(arg) or "."
        else:
            if not os.path.exists(arg):
                raise BadInput("%s: no such checkpoint file" % arg)
            files, self.dir = [arg], os.path.dirname(arg) or "."
        for path in files:
            for name, e in read_header(path).items():
                if name in self.entries:
                    raise BadInput("%s: tensor %s is also in %s" % (path, name,
                                                                    self.entries[name].path))
                self.entries[name] = e

    @staticmethod
    def _shards(index):
        try:
            with open(index, encoding="utf-8") as f:
                wm = json.load(f).get("weight_map")
        except OSError as e:
            raise BadInput("%s: cannot read the index: %s" % (index, e.strerror or e))
        except (ValueError, AttributeError) as e:
            raise BadInput("%s: not a safetensors index (%s)" % (index, e))
        if not isinstance(wm, dict) or not wm:
            raise BadInput("%s: the index has no weight_map" % index)
        base = os.path.dirname(index) or "."
        return [os.path.join(base, s) for s in sorted(set(wm.values()))]

    def names(self):
        return self.entries.keys()

    def shape(self, name):
        return self.entries[name].shape

    def read(self, name):
        """Tensor `name` as float64 (C order, the header's shape)."""
        e = self.entries[name]
        if e.dtype not in FLOATS:
            raise BadInput("%s: tensor %s has dtype %s; weights must be F64, F32, F16 or BF16"
                           % (e.path, name, e.dtype))
        try:
            with open(e.path, "rb") as f:
                f.seek(e.start)
                raw = f.read(e.end - e.start)
        except OSError as err:
            raise IOFailure("%s: cannot read tensor %s: %s" % (e.path, name, err.strerror or err))
        if len(raw) != e.end - e.start:
            raise BadInput("%s: tensor %s: the file ends inside its data" % (e.path, name))
        a = np.frombuffer(raw, dtype=FLOATS[e.dtype])
        if e.dtype == "BF16":  # the upper half of a float32
            a = (a.astype(np.uint32) << 16).view(np.float32)
        a = a.astype(np.float64).reshape(e.shape)
        if not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a))[0]
            raise BadInput("%s: tensor %s: entry %s is not finite" % (e.path, name,
                                                                     tuple(int(i) for i in bad)))
        return a


# ---------------------------------------------------------------- naming conventions
#
# One entry per model: the tensors of one stored layer ({l}: layer index; ALBERT: {g} group,
# {i} layer inside the group) and their orientation. "linear": nn.Linear, stored [out, in],
# y = x W^T. "conv1d": GPT-2's Conv1D, stored [in, out], y = x W. "fused": one [in, 3 A] tensor
# holding query, key and value columns in that order.

LAYOUTS = {
    "bert": {
        "orient": "linear",
        "q": "encoder.layer.{l}.attention.self.query.weight",
        "k": "encoder.layer.{l}.attention.self.key.weight",
        "v": "encoder.layer.{l}.attention.self.value.weight",
        "o": "encoder.layer.{l}.attention.output.dense.weight",
    },
    "vit": {
        "orient": "linear",
        "q": "encoder.layer.{l}.attention.attention.query.weight",
        "k": "encoder.layer.{l}.attention.attention.key.weight",
        "v": "encoder.layer.{l}.attention.attention.value.weight",
        "o": "encoder.layer.{l}.attention.output.dense.weight",
    },
    "albert": {
        "orient": "linear",
        "q": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.query.weight",
        "k": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.key.weight",
        "v": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.value.weight",
        "o": "encoder.albert_layer_groups.{g}.albert_layers.{i}.attention.dense.weight",
    },
    "gpt2": {
        "orient": "conv1d",
        "qkv": "h.{l}.attn.c_attn.weight",
        "o": "h.{l}.attn.c_proj.weight",
    },
}
MODELS = sorted(LAYOUTS)


def key_template(layout):
    """The template whose presence defines a layer (the query or the fused tensor)."""
    return layout.get("q") or layout["qkv"]


def template_regex(template):
    """Regex for PREFIX + template; groups: the prefix, then the indices in template order."""
    parts = re.split(r"(\{[a-z]\})", template)
    body = "".join(r"(\d+)" if re.fullmatch(r"\{[a-z]\}", p) else re.escape(p) for p in parts)
    return re.compile(r"^((?:.+\.)?)" + body + "$"), re.findall(r"\{([a-z])\}", template)


def find_layers(ck, model, prefix):
    """{prefix: sorted index tuples} of the layers named like the model's key template."""
    rx, _ = template_regex(key_template(LAYOUTS[model]))
    found = {}
    for name in ck.names():
        m = rx.match(name)
        if m and (prefix is None or m.group(1) == prefix):
            found.setdefault(m.group(1), set()).add(tuple(int(x) for x in m.groups()[1:]))
    return {p: sorted(v) for p, v in found.items()}


def detect(ck, prefix):
    """The one convention whose key tensors are present, or BadInput."""
    hits = [m for m in MODELS if find_layers(ck, m, prefix)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise BadInput("%s: tensors of several layouts (%s) are present; choose one with --model"
                       % (ck.arg, ", ".join(hits)))
    sample = sorted(ck.names())[:5]
    raise BadInput("%s: unknown layout: no tensor is named like %s; the checkpoint holds e.g. %s "
                   "(docs/weights.md lists the names read)" % (
                       ck.arg, " or ".join(key_template(LAYOUTS[m]) for m in MODELS),
                       ", ".join(sample) if sample else "no tensors"))


def layer_grid(ck, model, prefix):
    """(prefix, [index tuples of every stored layer]). The layers found must form a full grid
    0..max in every index: a hole is a missing tensor, named."""
    layout = LAYOUTS[model]
    found = find_layers(ck, model, prefix)
    if not found:
        raise BadInput("%s: unknown layout for --model %s: no tensor is named like %s%s" % (
            ck.arg, model, prefix or "", key_template(layout)))
    if len(found) > 1:
        raise BadInput("%s: the %s tensors appear under several prefixes (%s); choose one with "
                       "--prefix" % (ck.arg, model, ", ".join(repr(p) for p in sorted(found))))
    (pre, idx), = found.items()
    _, keys = template_regex(key_template(layout))
    tops = [max(t[j] for t in idx) + 1 for j in range(len(keys))]
    grid = [()]
    for top in tops:
        grid = [g + (v,) for g in grid for v in range(top)]
    return pre, grid


def tensor_name(layout, role, prefix, keys, idx):
    return prefix + layout[role].format(**dict(zip(keys, idx)))


def need(ck, name):
    if name not in ck.entries:
        raise BadInput("%s: tensor %s is missing" % (ck.arg, name))
    return ck.shape(name)


def plan_layer(ck, model, prefix, keys, idx, heads):
    """Names, shapes and the head split of one stored layer, from the header alone.
    Returns (names dict, d, A) with A = all-head width (d_k = A / heads)."""
    layout = LAYOUTS[model]
    names = {r: tensor_name(layout, r, prefix, keys, idx) for r in ("q", "k", "v", "o", "qkv")
             if r in layout}
    if "qkv" in names:  # Conv1D [d, 3 A]
        s = need(ck, names["qkv"])
        if len(s) != 2 or s[1] % 3 != 0:
            raise BadInput("%s: tensor %s has shape %s; expected [d, 3 A] (query, key, value "
                           "columns)" % (ck.arg, names["qkv"], list(s)))
        d, A = s[0], s[1] // 3
        fused = s[1]
    else:  # nn.Linear [A, d] for q, k, v
        s = need(ck, names["q"])
        if len(s) != 2:
            raise BadInput("%s: tensor %s has shape %s; expected [A, d]" % (ck.arg, names["q"],
                                                                             list(s)))
        A, d = s
        for r in ("k", "v"):
            t = need(ck, names[r])
            if tuple(t) != (A, d):
                raise BadInput("%s: tensor %s has shape %s; expected %s like %s" % (
                    ck.arg, names[r], list(t), [A, d], names["q"]))
        fused = None
    if A % heads != 0 or A == 0:
        what = names.get("qkv", names.get("q"))
        raise BadInput("%s: tensor %s: its %d %s do not divide into %d heads" % (
            ck.arg, what, A, "query features" if fused is None else "query columns (of %d)"
            % fused, heads))
    o = need(ck, names["o"])
    want = (A, d) if layout["orient"] == "conv1d" else (d, A)
    if tuple(o) != want:
        raise BadInput("%s: tensor %s has shape %s; expected %s (%s of the %d head features)"
                       % (ck.arg, names["o"], list(o), list(want),
                          "Conv1D [in, out]" if layout["orient"] == "conv1d"
                          else "nn.Linear [out, in]", A))
    return names, d, A


def row_form(ck, model, names, A):
    """W_Q, W_K, W_V (d x A) and W_O (A x d) in the row-vector convention y = x W."""
    if "qkv" in names:
        w = ck.read(names["qkv"])  # Conv1D: already y = x W
        wq, wk, wv = w[:, :A], w[:, A:2 * A], w[:, 2 * A:]
        wo = ck.read(names["o"])
    else:  # nn.Linear [out, in]: y = x W^T
        wq, wk, wv = (ck.read(names[r]).T for r in ("q", "k", "v"))
        wo = ck.read(names["o"]).T
    return wq, wk, wv, wo


def slice_desc(model, names, role, h, dk, A):
    """Which part of which tensor head h's matrix comes from (stored orientation)."""
    lo, hi = h * dk, (h + 1) * dk
    if "qkv" in names and role in "qkv":
        off = "qkv".index(role) * A
        return "%s[:, %d:%d]" % (names["qkv"], off + lo, off + hi)
    if role == "o":
        if LAYOUTS[model]["orient"] == "conv1d":
            return "%s[%d:%d, :]" % (names["o"], lo, hi)
        return "%s[:, %d:%d]" % (names["o"], lo, hi)
    return "%s[%d:%d, :]" % (names[role], lo, hi)


# ---------------------------------------------------------------- command line

def parse_layers(text):
    out = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise BadInput("--layers %s: expected a list like 0,3,5-7" % text)
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a:
            raise BadInput("--layers %s: range %d-%d is empty" % (text, a, b))
        out.update(range(a, b + 1))
    return sorted(out)


def parse_args(argv):
    opts = {"out": None, "model": None, "heads": None, "config": None, "prefix": None,
            "layers": None, "ckpt": None}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a in ("-o", "--output", "--model", "--heads", "--config", "--prefix", "--layers"):
            if not args:
                raise BadInput("%s needs a value" % a)
            v = args.pop(0)
            key = "out" if a in ("-o", "--output") else a[2:]
            opts[key] = v
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
        raise BadInput("--model %s: expected one of %s" % (opts["model"], ", ".join(MODELS)))
    if opts["heads"] is not None:
        if not re.fullmatch(r"[1-9][0-9]*", opts["heads"]):
            raise BadInput("--heads %s: expected a positive integer" % opts["heads"])
        opts["heads"] = int(opts["heads"])
    if opts["layers"] is not None:
        opts["layers"] = parse_layers(opts["layers"])
    return opts


def read_config(opts, ck):
    """The checkpoint's config.json as a dict ({} when there is none and none was named)."""
    path = opts["config"] or os.path.join(ck.dir, "config.json")
    if not os.path.exists(path):
        if opts["config"]:
            raise BadInput("--config %s: no such file" % path)
        return {}, None
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise IOFailure("%s: cannot read: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise BadInput("%s: not valid JSON (%s)" % (path, e))
    if not isinstance(cfg, dict):
        raise BadInput("%s: not a JSON object" % path)
    return cfg, path


def num_heads(opts, cfg, cfg_path, ck):
    if opts["heads"] is not None:
        return opts["heads"]
    if cfg_path is None:
        raise BadInput("the number of heads is unknown: give --heads H, or put config.json "
                       "beside the checkpoint (looked for %s)" % os.path.join(ck.dir,
                                                                             "config.json"))
    for key in ("num_attention_heads", "n_head"):
        v = cfg.get(key)
        if v is not None:
            if not isinstance(v, int) or v < 1:
                raise BadInput("%s: %s = %r is not a positive integer" % (cfg_path, key, v))
            return v
    raise BadInput("%s: neither num_attention_heads nor n_head is set; give --heads H"
                   % cfg_path)


def run(opts):
    ck = Checkpoint(opts["ckpt"])
    cfg, cfg_path = read_config(opts, ck)
    heads = num_heads(opts, cfg, cfg_path, ck)
    model = opts["model"] or detect(ck, opts["prefix"])
    prefix, grid = layer_grid(ck, model, opts["prefix"])
    _, keys = template_regex(key_template(LAYOUTS[model]))
    # Plan every layer from the header first: a bad tensor stops before anything is written.
    plans = [plan_layer(ck, model, prefix, keys, idx, heads) for idx in grid]
    d0, a0 = plans[0][1], plans[0][2]
    for names, d, A in plans:
        if (d, A) != (d0, a0):
            first = names.get("qkv", names.get("q"))
            raise BadInput("%s: tensor %s: d = %d, %d head features; layer 0 has d = %d, %d"
                           % (ck.arg, first, d, A, d0, a0))
    layers = list(range(len(grid)))
    if opts["layers"] is not None:
        bad = [x for x in opts["layers"] if x >= len(grid)]
        if bad:
            raise BadInput("--layers: layer %d does not exist (the checkpoint stores %d)"
                           % (bad[0], len(grid)))
        layers = opts["layers"]
    d, A = d0, a0
    dk = A // heads
    try:
        import h5py
    except ImportError as e:
        raise IOFailure("h5py is not available (%s); install python3-h5py" % e)

    k = len(layers) * heads
    out = opts["out"]
    tmp = out + ".tmp%d" % os.getpid()
    try:
        with h5py.File(tmp, "w") as f:
            g = f.create_group("triples")
            dq = g.create_dataset("Q", (k, dk, d), dtype="f8")
            dkk = g.create_dataset("K", (k, dk, d), dtype="f8")
            dv = g.create_dataset("V", (k, d, d), dtype="f8")
            lay = np.empty(k, dtype=np.int32)
            hd = np.empty(k, dtype=np.int32)
            tens = np.empty((k, 4), dtype=object)
            t = 0
            for li in layers:
                names = plans[li][0]
                wq, wk, wv, wo = row_form(ck, model, names, A)
                for h in range(heads):
                    s = slice(h * dk, (h + 1) * dk)
                    dq[t] = wq[:, s].T
                    dkk[t] = wk[:, s].T
                    dv[t] = (wv[:, s] @ wo[s, :]).T
                    lay[t], hd[t] = li, h
                    tens[t] = [slice_desc(model, names, r, h, dk, A) for r in "qkvo"]
                    t += 1
            g["layer"] = lay
            g["head"] = hd
            ts = g.create_dataset("tensors", data=tens.astype(str).tolist(),
                                  dtype=h5py.string_dtype())
            ts.attrs["columns"] = "query key value output"
            a = g.attrs
            a["mscale"] = 1.0 / math.sqrt(dk)
            a["model"] = model
            a["checkpoint"] = os.path.abspath(opts["ckpt"])
            a["prefix"] = prefix
            a["num_heads"] = heads
            a["num_layers"] = len(grid)
            a["d"] = d
            a["d_k"] = dk
            a["biases"] = "ignored"
            a["convention"] = ("row vectors q = x W_Q; Q_h = (W_Q^h)^T, K_h = (W_K^h)^T (d_k x d); "
                               "M_h = mscale Q_h^T K_h, mscale = 1/sqrt(d_k); "
                               "V_h = (W_V^h W_O^h)^T (d x d)")
            if cfg_path:
                a["config"] = os.path.abspath(cfg_path)
                for key in ("model_type", "num_hidden_layers", "num_hidden_groups",
                            "inner_group_num", "embedding_size", "hidden_size"):
                    if isinstance(cfg.get(key), (int, str)) and not isinstance(cfg[key], bool):
                        a["config_" + key] = cfg[key]
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
    print("%s: %s, %d layer%s x %d heads (d = %d, d_k = %d, mscale = 1/sqrt(%d)) -> %s: %d "
          "triples" % (PROG, model, len(layers), "" if len(layers) == 1 else "s", heads, d, dk,
                       dk, out, k), file=sys.stderr)


def main(argv):
    try:
        run(parse_args(argv))
    except BadInput as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    except IOFailure as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
