#!/usr/bin/env bash
# Runs one libFuzzer target of the asan build for SECONDS seconds, seeded from ../shared
# (or $LLMPORT_SHARED), the repository's data and the committed regression inputs.
#   scripts/fuzz.sh TARGET [SECONDS] [extra libFuzzer flags...]
# TARGET: chat_template config tokenizer safetensors records registry serve_request.
# Build first: cmake --preset asan && cmake --build --preset asan.
# Any finding (crash, sanitizer report, leak, timeout > 10 s, > 2 GiB RSS) fails the run;
# its reproducer is left in build-asan/fuzz/artifacts/TARGET/. Minimize it with
#   build-asan/tests/fuzz/fuzz_TARGET -minimize_crash=1 -runs=10000 ARTIFACT
# and commit the result as tests/fuzz/regressions/TARGET/<what-it-is>; ctest replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...]}"
seconds="${2:-30}"
shift $(( $# >= 2 ? 2 : 1 ))
shared="${LLMPORT_SHARED:-$(cd .. && pwd)/shared}"
bin="build-asan/tests/fuzz/fuzz_${target}"
[ -x "$bin" ] || { echo "fuzz.sh: $bin not built (cmake --build --preset asan)" >&2; exit 2; }
work="build-asan/fuzz"
seeds="$work/seeds/$target"
corpus="$work/corpus/$target"
artifacts="$work/artifacts/$target"
mkdir -p "$seeds" "$corpus" "$artifacts"
rm -f "$seeds"/*

# Seed corpus: the shared files each reader reads, cut to the 64 KiB the runs use.
add() { for f in "$@"; do [ -f "$f" ] && head -c 65536 "$f" > "$seeds/$(echo "$f" | tr '/' '_')"; done; return 0; }
dict=tests/fuzz/dict/json.dict
case "$target" in
  chat_template)
    dict=tests/fuzz/dict/jinja.dict
    add "$shared"/tokenizers/*/*.jinja
    python3 - "$shared" "$seeds" <<'PY'
import json, pathlib, sys
shared, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for cfg in list(shared.glob("tokenizers/*/tokenizer_config.json")) + list(shared.glob("models/**/tokenizer_config.json")):
    try:
        t = json.loads(cfg.read_text()).get("chat_template")
    except Exception:
        continue
    items = [("default", t)] if isinstance(t, str) else [(x.get("name", "t"), x.get("template", "")) for x in (t or [])]
    for name, src in items:
        if isinstance(src, str) and src:
            key = "_".join(cfg.parts[-3:-1]) + "_" + name
            (out / (key + ".jinja")).write_text(src)
PY
    ;;
  config)
    add "$shared"/configs/*.json "$shared"/models/*/config.json "$shared"/models/*/*/config.json \
        "$shared"/models/*/generation_config.json "$shared"/models/*/*/generation_config.json ;;
  tokenizer)
    for f in "$shared"/tokenizers/*/tokenizer.json "$shared"/models/*/tokenizer.json; do
      [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ] && add "$f"
    done
    # The big tokenizers do not fit 64 KiB whole: their head (model type, added tokens,
    # normalizer, pre-tokenizer) still seeds the structure.
    add "$shared"/tokenizers/llama2/tokenizer.json "$shared"/tokenizers/qwen3/tokenizer.json ;;
  safetensors)
    add "$shared"/models/*/model.safetensors "$shared"/models/*/*/model.safetensors \
        "$shared"/models/*/model.safetensors.index.json "$shared"/models/*/*/model.safetensors.index.json
    printf '%s' '{"metadata": {"total_size": 8}, "weight_map": {"model.norm.weight": "model-00001-of-00001.safetensors"}}' \
      > "$seeds/index.json" ;;
  records)
    add "$shared"/models/*/golden/*.json "$shared"/models/*/*/golden.json tests/data/verify/*.json ;;
  registry)
    add data/registry/cpu/*.json ;;
  serve_request)
    add tests/fuzz/regressions/serve_request/* "$shared"/models/*/golden/public_prompts.json ;;
  http_framing)
    dict=tests/fuzz/dict/http.dict
    add tests/fuzz/regressions/http_framing/* ;;
  *) echo "fuzz.sh: unknown target '$target'" >&2; exit 2 ;;
esac
regress="tests/fuzz/regressions/$target"

log="$work/$target.log"
set +e
"$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$dict" -artifact_prefix="$artifacts/" "$@" "$corpus" "$seeds" "$regress" > "$log" 2>&1
rc=$?
set -e
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
if [ "$rc" -ne 0 ]; then
  echo "fuzz $target: FINDING (exit $rc) after ${seconds}s limit; log $log, reproducer in $artifacts/"
  grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written' "$log" | head -20
  exit 1
fi
echo "fuzz $target: ok, ${seconds}s, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}"
