#!/usr/bin/env python3
"""Instruction-count A/B of two llmport binaries (valgrind callgrind), for a host too noisy
for wall-clock A/B (bench/ab_compare.py): instructions retired do not move with other
tenants' load or the memory bandwidth.

    bench/ab_instructions.py --old OLD --new NEW --model DIR [--model DIR ...]
        [--prompt-len 48] [--n-gen 32]

Each binary runs `llmport run MODEL --prompt-ids ... -n N --ignore-eos -t 1 --json` under
callgrind once per model (deterministic: one run is enough); the table gives the inclusive
instructions of Engine::Impl::forward, Engine::prefill, Engine::decode_step and
llmport::generate, their ratio new/old, and whether the generated tokens agree.

Limits: valgrind emulates no AVX-512, so the binaries dispatch their AVX2 kernels; one
thread (the work pool's spinning would count); small models only (a 0.6B model's load
alone is ~9e9 instructions, minutes under callgrind). Instruction counts show the work a
code path does, not its memory behaviour.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FUNCS = ["Engine::Impl::forward", "Engine::prefill", "Engine::decode_step", "llmport::generate"]


def inclusive(out_file):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out_file], capture_output=True,
                          text=True, check=True).stdout
    got = {}
    for line in text.splitlines():
        for f in FUNCS:
            if f not in got and f + "(" in line:
                got[f] = int(line.split()[0].replace(",", ""))
    return got


def run(binary, model, ids, n_gen, tmp, tag):
    out = os.path.join(tmp, tag + ".callgrind")
    env = dict(os.environ, LLMPORT_PROBE="0")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary, "run", model,
                        "--prompt-ids", ids, "-n", str(n_gen), "--ignore-eos", "-t", "1", "--json"],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{binary} on {model} failed ({r.returncode}): {r.stderr[-2000:]}")
    return inclusive(out), json.loads(r.stdout)["generated_ids"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--prompt-len", type=int, default=48)
    ap.add_argument("--n-gen", type=int, default=32)
    args = ap.parse_args(argv)
    ids = ",".join(str(i * 7 % 500 + 5) for i in range(args.prompt_len))
    print("| model | function | old instructions | new instructions | new/old | same tokens |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.model:
            old, old_ids = run(args.old, m, ids, args.n_gen, tmp, "old")
            new, new_ids = run(args.new, m, ids, args.n_gen, tmp, "new")
            for f in FUNCS:
                if f in old and f in new:
                    print(f"| {os.path.basename(m.rstrip('/'))} | {f} | {old[f]:,} | {new[f]:,} | "
                          f"{new[f] / old[f]:.4f} | {'yes' if old_ids == new_ids else '**no**'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
