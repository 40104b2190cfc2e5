#!/usr/bin/env python3
"""Independent numpy reference for `llmport verify --reference golden:FILE`.

A second implementation of transformers' modeling_llama.py / _mistral.py / _qwen2.py /
_qwen3.py forward pass in numpy, float64 throughout, from the checkpoint's own files
(config.json and *.safetensors, read here without llmport). It shares no code with llmport.
For each prompt it runs free-running greedy for exactly --steps tokens (EOS ignored, ties
toward the smaller id) and writes the same `llmport-records/1` file tools/hf_reference.py
writes, with the full logits in `<out stem>.safetensors` (`seq<i>.logits` [n_steps, vocab]
fp32), so that verify computes the full KL.

Semantics (transformers v4.4x): RMSNorm x / sqrt(mean(x^2) + eps) * w; rotate-half RoPE
with inv_freq = theta^(-2i/d) (rope_scaling: none/default, linear, or llama3 as in
modeling_rope_utils._compute_llama3_parameters); Qwen3 q/k RMSNorm per head before RoPE;
QKV bias where the checkpoint has q_proj.bias (Qwen2, attention_bias); causal GQA softmax
attention at 1/sqrt(head_dim); SwiGLU MLP down(silu(gate x) * up x); lm_head or the tied
embedding. A Mistral/Qwen2 sliding window shorter than prompt + steps is refused.

Usage:
  python3 tools/numpy_reference.py --model DIR --prompts PROMPTS.json --steps 8 --out ref.json
PROMPTS.json: {"prompts": [{"name", "prompt_ids"}]} (or a plain list of such objects); this
reference has no tokenizer, so prompts are token ids. Needs numpy (Debian: python3-numpy).
Exit 2 with one `error:` line for input it cannot use.
"""
import argparse
import glob
import json
import os
import platform
import struct
import sys

import numpy as np


class InputError(Exception):
    pass


def read_safetensors(path):
    """{name: float64 array} of one safetensors file (F32, F16, BF16)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[base + a:base + b]
        if t["dtype"] == "F32":
            v = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "F16":
            v = np.frombuffer(raw, dtype="<f2")
        elif t["dtype"] == "BF16":  # the top 16 bits of a float32: widening is exact
            v = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise InputError(f"{path}: {name}: dtype {t['dtype']} not supported by this reference")
        out[name] = v.astype(np.float64).reshape(t["shape"])
    return out


def load_weights(model_dir):
    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not files:
        raise InputError(f"{model_dir}: no *.safetensors")
    w = {}
    for f in files:
        w.update(read_safetensors(f))
    return w


def inv_freq(cfg, head_dim):
    # transformers v5 writes rope_theta and the scaling into rope_parameters (llmport refuses
    # a config whose two layouts disagree, so either reading gives the same values).
    rp = cfg.get("rope_parameters") or {}
    theta = float(cfg.get("rope_theta", rp.get("rope_theta", 10000.0)))
    f = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    rs = cfg.get("rope_scaling") or rp
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "default":
        return f
    if kind == "linear":
        return f / float(rs["factor"])
    if kind == "llama3":
        factor, lo, hi = float(rs["factor"]), float(rs["low_freq_factor"]), float(rs["high_freq_factor"])
        old = float(rs["original_max_position_embeddings"])
        wavelen = 2 * np.pi / f
        scaled = np.where(wavelen > old / lo, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        mid = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / hi) & (wavelen <= old / lo)
        return np.where(medium, mid, scaled)
    raise InputError(f"rope_scaling type {kind!r} not supported by this reference")


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, positions, freq):
    """x [n, heads, head_dim]; rotate-half convention of transformers' apply_rotary_pos_emb."""
    ang = positions[:, None] * freq[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rot * sin


class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            self.cfg = cfg = json.load(f)
        self.w = load_weights(model_dir)
        self.n_layers = cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv = cfg.get("num_key_value_heads") or self.n_heads
        self.head_dim = cfg.get("head_dim") or cfg["hidden_size"] // self.n_heads
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.freq = inv_freq(cfg, self.head_dim)
        self.max_pos = int(cfg.get("max_position_embeddings", 1 << 30))
        window = cfg.get("sliding_window")
        uses_window = cfg.get("use_sliding_window", False) if "Qwen" in cfg["architectures"][0] else True
        self.window = int(window) if window and uses_window else None
        if cfg.get("hidden_act", "silu") not in ("silu", "swish"):
            raise InputError(f"hidden_act {cfg['hidden_act']!r} not supported by this reference")
        # As transformers ties them (TRAPS.md #8): tie_word_embeddings (absent: false for
        # these families) decides, not whether the file happens to hold an lm_head.
        tied = bool(cfg.get("tie_word_embeddings", False))
        if not tied and "lm_head.weight" not in self.w:
            raise InputError("tie_word_embeddings is false and the checkpoint has no lm_head.weight")
        self.lm_head = self.w["model.embed_tokens.weight"] if tied else self.w["lm_head.weight"]

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        b = self.w.get(name + ".bias")
        return y + b if b is not None else y

    def logits(self, ids, cache):
        """Logits [n, vocab] of ids at positions len(cache)..len(cache)+n-1 of one sequence;
        cache (a KvCache) holds the keys and values of the earlier positions and grows."""
        n, start = len(ids), cache.length
        if self.window is not None and start + n > self.window:
            raise InputError(f"{start + n} tokens exceed the sliding window {self.window}")
        pos = np.arange(start, start + n, dtype=np.float64)
        x = self.w["model.embed_tokens.weight"][np.asarray(ids)]
        group = self.n_heads // self.n_kv
        mask = np.triu(np.full((n, start + n), -np.inf), k=start + 1)  # query i sees keys <= start + i
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            h = rms_norm(x, self.w[p + "input_layernorm.weight"], self.eps)
            q = self.linear(h, p + "self_attn.q_proj").reshape(n, self.n_heads, self.head_dim)
            k = self.linear(h, p + "self_attn.k_proj").reshape(n, self.n_kv, self.head_dim)
            v = self.linear(h, p + "self_attn.v_proj").reshape(n, self.n_kv, self.head_dim)
            if p + "self_attn.q_norm.weight" in self.w:  # Qwen3
                q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], self.eps)
                k = rms_norm(k, self.w[p + "self_attn.k_norm.weight"], self.eps)
            q, k = rope(q, pos, self.freq), rope(k, pos, self.freq)
            k, v = cache.append(i, k, v)
            k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
            s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(self.head_dim) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            o = np.einsum("hqk,khd->qhd", s, v).reshape(n, self.n_heads * self.head_dim)
            x = x + self.linear(o, p + "self_attn.o_proj")
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], self.eps)
            g = self.linear(h, p + "mlp.gate_proj")
            x = x + self.linear(g / (1 + np.exp(-g)) * self.linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        cache.length += n
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.lm_head.T


class KvCache:
    """Keys (after RoPE) and values of every layer, [positions, n_kv_heads, head_dim]."""

    def __init__(self, n_layers):
        self.k, self.v, self.length = [None] * n_layers, [None] * n_layers, 0

    def append(self, layer, k, v):
        if self.k[layer] is not None:
            k, v = np.concatenate([self.k[layer], k]), np.concatenate([self.v[layer], v])
        self.k[layer], self.v[layer] = k, v
        return k, v


def top_k_lowest_id(logits, k):
    order = np.lexsort((np.arange(len(logits)), -logits))  # logit descending, ties: smaller id
    return [int(i) for i in order[:k]]


def log_sum_exp(logits):
    m = logits.max()
    return float(m + np.log(np.exp(logits - m).sum()))


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def run(args):
    with open(args.prompts, encoding="utf-8") as f:
        spec = json.load(f)
    prompts = spec["prompts"] if isinstance(spec, dict) else spec
    model = Model(args.model)
    vocab = model.lm_head.shape[0]
    sequences, side = [], {}
    for i, p in enumerate(prompts):
        name = p.get("name", f"prompt{i}")
        if "prompt_ids" not in p:
            raise InputError(f"{args.prompts}: prompt {name}: prompt_ids needed (this reference has no tokenizer)")
        ids = [int(t) for t in p["prompt_ids"]]
        if not ids or min(ids) < 0 or max(ids) >= vocab:
            raise InputError(f"{args.prompts}: prompt {name}: ids must be in [0, {vocab})")
        if len(ids) + args.steps - 1 > model.max_pos:
            raise InputError(f"{args.prompts}: prompt {name}: {len(ids)} ids + {args.steps} steps exceed "
                             f"max_position_embeddings {model.max_pos}")
        steps, tokens, rows = [], [], []
        cache = KvCache(model.n_layers)
        logits = model.logits(ids, cache)[-1]
        for s in range(args.steps):
            top = top_k_lowest_id(logits, args.top_k)
            steps.append({"ids": top, "logits": [float(logits[t]) for t in top], "logsumexp": log_sum_exp(logits)})
            tokens.append(top[0])
            rows.append(logits)
            if s + 1 < args.steps:
                logits = model.logits([top[0]], cache)[-1]
        sequences.append({"name": name, "prompt": None, "prompt_rendering": "ids", "prompt_ids": ids,
                          "tokens": tokens, "steps": steps})
        side[f"seq{i}.logits"] = np.stack(rows)
    side_path = os.path.splitext(args.out)[0] + ".safetensors"
    write_safetensors(side_path, side)
    rec = {"format": "llmport-records/1", "model": os.path.basename(os.path.normpath(args.model)),
           "producer": "tools/numpy_reference.py (numpy re-implementation of transformers' forward, float64)",
           "compute_dtype": "float64", "independent": True, "n_steps": args.steps,
           "side_file": os.path.basename(side_path),
           "versions": {"python": platform.python_version(), "numpy": np.__version__},
           "sequences": sequences}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(rec, f, ensure_ascii=False, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model directory (config.json + *.safetensors)")
    ap.add_argument("--prompts", required=True, help="prompt JSON file (prompt_ids)")
    ap.add_argument("--steps", type=int, default=8, help="tokens per prompt (1 prefill + steps-1 decode)")
    ap.add_argument("--out", required=True, help="output record file (.json)")
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--force", action="store_true", help="replace an existing --out file and its side file")
    args = ap.parse_args()
    for path in (args.out, os.path.splitext(args.out)[0] + ".safetensors"):
        if os.path.exists(path) and not args.force:
            print(f"error: {path} exists; not overwriting (--force replaces it)", file=sys.stderr)
            return 2
    try:
        run(args)
    except (InputError, OSError, KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
