#!/usr/bin/env python3
"""Independent reference for `llmport verify --reference hf`.

Loads a Hugging Face model with transformers' AutoModelForCausalLM (bf16 by default),
runs each prompt free-running greedy for exactly --steps tokens (EOS ignored, ties toward
the smaller id) and writes an `llmport-records/1` file that `llmport verify
--reference golden:FILE` reads:

  {"format": "llmport-records/1", "model", "producer", "compute_dtype", "independent": true,
   "n_steps", "side_file", "versions": {"python", "torch", "transformers"},
   "sequences": [{"name", "prompt", "prompt_rendering", "prompt_ids", "tokens",
                  "steps": [{"ids": [top-k ids], "logits": [...], "logsumexp": float}]}]}

plus `<out stem>.safetensors` with `seq<i>.logits` [n_steps, vocab] (fp32), so llmport can
compute the full KL. Needs torch, transformers (and safetensors, a transformers dependency).
Not run in CI (transformers is not installed there); see docs/verification.md.

Usage:
  python3 tools/hf_reference.py --model DIR --prompts PROMPTS.json --steps 32 --out ref.json
PROMPTS.json: {"chat": bool, "prompts": [{"name", "text"} | {"name", "prompt_ids"}]}
  (or a plain list of such objects / strings). With chat true, texts are rendered with the
tokenizer's chat template (apply_chat_template, add_generation_prompt=True).
"""
import argparse
import json
import math
import os
import platform
import sys


def top_k_lowest_id(logits, k):
    # Sort by logit descending, ties toward the smaller id (llmport's and the goldens' rule).
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    return order[:k]


def log_sum_exp(logits):
    m = max(logits)
    return m + math.log(sum(math.exp(v - m) for v in logits))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model directory (or HF id)")
    ap.add_argument("--prompts", required=True, help="prompt JSON file")
    ap.add_argument("--steps", type=int, default=32, help="tokens per prompt (1 prefill + steps-1 decode)")
    ap.add_argument("--out", required=True, help="output record file (.json)")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--no-side-file", action="store_true", help="skip the full-logits side file")
    ap.add_argument("--force", action="store_true", help="replace an existing --out file and its side file")
    args = ap.parse_args()
    for path in (args.out, os.path.splitext(args.out)[0] + ".safetensors"):
        if os.path.exists(path) and not args.force:
            print(f"error: {path} exists; not overwriting (--force replaces it)", file=sys.stderr)
            return 2

    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        print(f"error: hf_reference.py needs torch and transformers: {e}", file=sys.stderr)
        return 2

    with open(args.prompts, encoding="utf-8") as f:
        spec = json.load(f)
    chat = bool(spec.get("chat", False)) if isinstance(spec, dict) else False
    prompts = spec["prompts"] if isinstance(spec, dict) else spec

    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=dtype)
    model.eval()
    tok = None
    if os.path.exists(os.path.join(args.model, "tokenizer.json")) or not os.path.isdir(args.model):
        tok = AutoTokenizer.from_pretrained(args.model)

    sequences, side = [], {}
    for i, p in enumerate(prompts):
        if isinstance(p, str):
            p = {"name": f"prompt{i}", "text": p}
        name = p.get("name", f"prompt{i}")
        text = p.get("text", p.get("prompt"))
        if "prompt_ids" in p:
            ids, rendering = list(p["prompt_ids"]), "ids"
        elif tok is None:
            print(f"error: prompt {name}: text given but the model has no tokenizer", file=sys.stderr)
            return 2
        elif chat and tok.chat_template:
            ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                          tokenize=True)
            rendering = "chat_template"
        else:
            ids, rendering = tok.encode(text), "raw"
        steps, tokens, all_logits = [], [], []
        with torch.no_grad():
            out = model(torch.tensor([ids]), use_cache=True)
            for s in range(args.steps):
                logits = out.logits[0, -1].float().tolist()
                top = top_k_lowest_id(logits, args.top_k)
                steps.append({"ids": top, "logits": [logits[t] for t in top], "logsumexp": log_sum_exp(logits)})
                tokens.append(top[0])
                all_logits.append(logits)
                if s + 1 < args.steps:
                    out = model(torch.tensor([[top[0]]]), past_key_values=out.past_key_values, use_cache=True)
        sequences.append({"name": name, "prompt": text, "prompt_rendering": rendering, "prompt_ids": ids,
                          "tokens": tokens, "steps": steps})
        side[f"seq{i}.logits"] = all_logits

    rec = {"format": "llmport-records/1", "model": os.path.basename(os.path.normpath(args.model)),
           "producer": f"tools/hf_reference.py (transformers AutoModelForCausalLM, {args.dtype})",
           "compute_dtype": args.dtype, "independent": True, "n_steps": args.steps,
           "versions": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__},
           "sequences": sequences}
    if not args.no_side_file:
        import numpy as np
        from safetensors.numpy import save_file
        side_path = os.path.splitext(args.out)[0] + ".safetensors"
        save_file({k: np.asarray(v, dtype=np.float32) for k, v in side.items()}, side_path)
        rec["side_file"] = os.path.basename(side_path)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(rec, f, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
