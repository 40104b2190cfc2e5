#!/usr/bin/env python3
"""Interleaved A/B benchmark of two llmport binaries (python3 standard library only).

    bench/ab_compare.py --old OLD_LLMPORT --new NEW_LLMPORT --model DIR [--model DIR ...]
                        [--rounds R] [--max-ratio 1.03] [--raw-dir DIR] [--out FILE.md]
                        [-- BENCH FLAGS ...]

For each model it runs `OLD bench MODEL FLAGS -o json`, then `NEW bench ...`, R rounds in
all (old, new, old, new, ...; --abba makes every other round new-first), so both binaries
see the same drift of a shared machine. Every `llmport bench` run reports each
repetition's rate (`samples_ts`, tokens/s); a repetition's time is its tokens over that
rate (pp: the prompt, tg: the generated tokens). Repetition j of round k of the old binary
is paired with repetition j of round k of the new one: R x (-r) pairs per test.

Per test (ppN, tgN) it prints the median times and the ratio new/old of the median times
with a 95% paired percentile-bootstrap interval: the method of `ratio_of_medians_interval`
in src/deploy/timing.cpp (Efron & Tibshirani, An Introduction to the Bootstrap, ch. 13),
reimplemented here number for number: 2000 resamples of the pairs with replacement drawn
with splitmix64 from seed 20241201, the ratio median(new*)/median(old*) of each, and the
2.5th and 97.5th percentiles of the sorted ratios taken at index clamp(q x (2000 - 1) + 0.5)
rounded down. Given the same samples, it returns the C++ function's interval exactly
(tests/cli/ab_compare_test.cpp checks this).

A ratio below 1 means the new binary is faster. With --max-ratio X the exit code is 1 when
the upper end of any interval exceeds X (the issue 14 acceptance: 1.03), else 0; 2 is bad
usage or a failed bench run.

`interval OLD_MS NEW_MS` (two comma-separated lists of paired times) prints
"ratio low high" for the given samples: what the test compares with the C++ function.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

MASK64 = (1 << 64) - 1


def _splitmix64(state):
    """One step of splitmix64: (new state, output), as next_u64 in src/deploy/timing.cpp."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def ratio_of_medians_interval(old, new, confidence=0.95, resamples=2000, seed=20241201):
    """(ratio, low, high) of median(new)/median(old) over paired samples; see the module doc."""
    if not old or len(old) != len(new):
        raise ValueError(f"needs paired samples of equal size (got {len(old)} and {len(new)})")
    n = len(old)
    ratios = []
    state = seed
    for _ in range(resamples):
        b, t = [], []
        for _ in range(n):
            state, r = _splitmix64(state)
            j = r % n
            b.append(old[j])
            t.append(new[j])
        ratios.append(median(t) / median(b))
    ratios.sort()
    tail = (1.0 - confidence) / 2.0

    def at(q):
        i = min(max(q * (resamples - 1) + 0.5, 0.0), resamples - 1.0)
        return ratios[int(i)]

    return median(new) / median(old), at(tail), at(1.0 - tail)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_bench(binary, model, flags):
    """One `llmport bench` run: {test: [time of each repetition in ms]}."""
    cmd = [binary, "bench", model, *flags, "-o", "json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr.strip()}")
    rows = json.loads(p.stdout)
    times = {}
    for row in rows:
        tokens = row["n_prompt"] if row["test"].startswith("pp") else row["n_gen"]
        times[row["test"]] = [1e3 * tokens / ts for ts in row["samples_ts"]]
    return times, p.stdout


def compare_model(args, model, log):
    """Rounds of old/new runs on one model; {test: (old times, new times)} in pair order."""
    paired = {}
    for k in range(args.rounds):
        order = ["old", "new"]
        if args.abba and k % 2 == 1:
            order.reverse()
        got = {}
        for which in order:
            binary = args.old if which == "old" else args.new
            t0 = time.monotonic()
            got[which], raw = run_bench(binary, model, args.bench_flags)
            log(f"  round {k + 1}/{args.rounds} {which}: " + ", ".join(
                f"{t} median {median(v):.2f} ms" for t, v in got[which].items()) +
                f" ({time.monotonic() - t0:.0f} s)")
            if args.raw_dir:
                name = f"{os.path.basename(os.path.normpath(model))}_round{k + 1}_{which}.json"
                with open(os.path.join(args.raw_dir, name), "w") as f:
                    f.write(raw)
        if set(got["old"]) != set(got["new"]):
            raise RuntimeError(f"the binaries ran different tests: {sorted(got['old'])} vs {sorted(got['new'])}")
        for test in got["old"]:
            o, n = got["old"][test], got["new"][test]
            if len(o) != len(n):
                raise RuntimeError(f"{test}: {len(o)} old and {len(n)} new repetitions")
            po, pn = paired.setdefault(test, ([], []))
            po.extend(o)
            pn.extend(n)
    return paired


def markdown(results, max_ratio):
    lines = ["| model | test | old median ms | new median ms | new/old | 95% interval | pairs |"
             + (f" upper <= {max_ratio:g} |" if max_ratio else ""),
             "| --- | --- | ---: | ---: | ---: | --- | ---: |" + (" --- |" if max_ratio else "")]
    for r in results:
        line = (f"| {r['model']} | {r['test']} | {r['old_median_ms']:.2f} | {r['new_median_ms']:.2f} | "
                f"{r['ratio']:.4f} | [{r['low']:.4f}, {r['high']:.4f}] | {r['pairs']} |")
        if max_ratio:
            line += " yes |" if r["high"] <= max_ratio else " **no** |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main_compare(argv):
    ap = argparse.ArgumentParser(
        prog="ab_compare.py",
        description="Interleaved A/B `llmport bench` of two binaries; bench flags go after `--`.")
    ap.add_argument("--old", required=True, help="the baseline llmport binary")
    ap.add_argument("--new", required=True, help="the candidate llmport binary")
    ap.add_argument("--model", required=True, action="append", help="model directory (repeatable)")
    ap.add_argument("--rounds", type=int, default=5, help="old/new run pairs per model (default 5)")
    ap.add_argument("--abba", action="store_true", help="every other round runs the new binary first")
    ap.add_argument("--max-ratio", type=float, default=0.0,
                    help="exit 1 when an interval's upper end exceeds this (e.g. 1.03)")
    ap.add_argument("--raw-dir", help="keep every run's `bench -o json` output here")
    ap.add_argument("--out", help="also write the markdown report to this file")
    ap.add_argument("bench_flags", nargs="*", help="flags for `llmport bench` (after --)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    for flag in ("-o", "--output", "--roofline"):
        if flag in args.bench_flags:
            ap.error(f"{flag}: the script sets the output (-o json) and needs the timed tests")
    for b in (args.old, args.new):
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not an executable")
    if args.raw_dir:
        os.makedirs(args.raw_dir, exist_ok=True)

    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731 (progress on stderr)
    results = []
    for model in args.model:
        log(f"{model}: {args.rounds} rounds, bench flags: {' '.join(args.bench_flags) or '(defaults)'}")
        for test, (old, new) in compare_model(args, model, log).items():
            ratio, low, high = ratio_of_medians_interval(old, new)
            results.append({"model": os.path.basename(os.path.normpath(model)), "test": test,
                            "old_median_ms": median(old), "new_median_ms": median(new),
                            "ratio": ratio, "low": low, "high": high, "pairs": len(old),
                            "old_ms": old, "new_ms": new})
    report = (f"old: `{args.old}` (sha256 {sha256_of(args.old)[:12]})  \n"
              f"new: `{args.new}` (sha256 {sha256_of(args.new)[:12]})  \n"
              f"bench flags: `{' '.join(args.bench_flags)}`; {args.rounds} interleaved rounds"
              f"{' (ABBA)' if args.abba else ''}; interval: paired percentile bootstrap of the ratio of "
              f"medians, 2000 resamples\n\n" + markdown(results, args.max_ratio))
    print(report, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    if args.raw_dir:
        with open(os.path.join(args.raw_dir, "summary.json"), "w") as f:
            json.dump(results, f, indent=1)
    if args.max_ratio and any(r["high"] > args.max_ratio for r in results):
        return 1
    return 0


def main(argv):
    if argv[:1] == ["interval"]:
        if len(argv) != 3:
            print("usage: ab_compare.py interval OLD_MS,... NEW_MS,...", file=sys.stderr)
            return 2
        old = [float(x) for x in argv[1].split(",")]
        new = [float(x) for x in argv[2].split(",")]
        print("%.17g %.17g %.17g" % ratio_of_medians_interval(old, new))
        return 0
    try:
        return main_compare(argv)
    except (RuntimeError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
