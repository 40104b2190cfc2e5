#!/usr/bin/env python3
"""Issue #15's tables from `llmport bench -o json` files of bf16, q8_0 and q4_0 runs.

    bench/quant_table.py PREFIX          # reads PREFIX_<shape>_<dtype>_p512n128_t2.json

for the shapes qwen3-0.6b, llama-3.2-1b and tinyllama-1.1b. Prints the per-test table
(tokens/s, per-repetition bound and fraction, bytes read per token, peak RSS / budget) and
the comparison table. The decode speedup over bf16 is compared with the ratio of bytes
read per token two ways: from tokens/s (moves with the host's bandwidth between runs) and
from the fractions of the bound measured beside each repetition (speedup / byte ratio =
fraction(quant) / fraction(bf16) when both read at the same rate; the stable figure).
"""
import json
import statistics
import sys

SHAPES = ["qwen3-0.6b", "llama-3.2-1b", "tinyllama-1.1b"]
DTYPES = ["bf16", "q8_0", "q4_0"]


def load(prefix, shape, dtype):
    with open(f"{prefix}_{shape}_{dtype}_p512n128_t2.json") as f:
        return {t["test"]: t for t in json.load(f)}


def fmt_list(xs, digits):
    return " / ".join(f"{x:.{digits}f}" for x in xs)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    prefix = argv[1]
    runs = {(s, d): load(prefix, s, d) for s in SHAPES for d in DTYPES}
    print("| shape | dtype | test | tokens/s (mean +- sd) | per repetition | bound beside each | "
          "fraction of bound | bound kind | weights read/token MiB | peak RSS / budget MiB |")
    print("|---|---|---|---|---|---|---|---|---:|---|")
    for s in SHAPES:
        for test in ["pp512", "tg128"]:
            for d in DTYPES:
                t = runs[(s, d)][test]
                bounds = t["roofline_bounds_ts"]
                fr = [x / b for x, b in zip(t["samples_ts"], bounds)]
                kind = t["roofline"]["compute_peak"] if test.startswith("pp") else "read"
                print(f"| {s} | {d} | {test} | {t['avg_ts']:.2f} +- {t['stddev_ts']:.2f} | "
                      f"{fmt_list(t['samples_ts'], 1)} | {fmt_list(bounds, 1)} | {fmt_list(fr, 2)} | {kind} | "
                      f"{t['weight_mib']:.0f} | {t['peak_rss_mib']:.0f} / {t['memory_budget_mib']:.0f} |")
    print()
    print("| shape | dtype | bytes ratio bf16/quant | decode speedup (tokens/s) | speedup / byte ratio "
          "(tokens/s) | same, from fractions of bound | pp512 vs bf16 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for s in SHAPES:
        b = runs[(s, "bf16")]
        fb = statistics.mean(x / y for x, y in zip(b["tg128"]["samples_ts"], b["tg128"]["roofline_bounds_ts"]))
        for d in ["q8_0", "q4_0"]:
            q = runs[(s, d)]
            ratio = b["tg128"]["weight_mib"] / q["tg128"]["weight_mib"]
            speed = q["tg128"]["avg_ts"] / b["tg128"]["avg_ts"]
            fq = statistics.mean(x / y for x, y in zip(q["tg128"]["samples_ts"], q["tg128"]["roofline_bounds_ts"]))
            pp = q["pp512"]["avg_ts"] / b["pp512"]["avg_ts"]
            print(f"| {s} | {d} | {ratio:.2f}x | {speed:.2f}x | {speed / ratio:.2f} | {fq / fb:.2f} | {pp:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
