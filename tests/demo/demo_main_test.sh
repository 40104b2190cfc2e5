#!/usr/bin/env bash
# scripts/demo.sh, the README's main job, end to end on its default synthetic model: the
# first run deploys through every phase (there is no deployment yet to --resume), the
# second finds it complete; both end with the summary and a PASS. Installing and building
# are the suite's own: the built llmport is copied in and only demo.sh's three setup lines
# are replaced.
set -euo pipefail
BIN="$1"
SRC="$2"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp -r "$SRC/scripts" "$SRC/tools" "$T/"
mkdir -p "$T/build"
cp "$BIN/llmport" "$T/build/llmport"
sed -i -e 's|^bash scripts/install-deps.sh$|:|' -e 's|^cmake --preset release.*$|:|' \
  -e 's|^cmake --build --preset release.*$|:|' "$T/scripts/demo.sh"
[ "$(grep -c '^:$' "$T/scripts/demo.sh")" = 3 ] || { echo "FAIL: demo.sh's setup lines are not the expected three"; exit 1; }
export LLMPORT_DATA_DIR="$SRC/data"
for run in 1 2; do
  out=$(bash "$T/scripts/demo.sh" 2>&1) || { echo "FAIL: run $run exited non-zero:"; echo "$out"; exit 1; }
  grep -q '^verdict    PASS ' <<<"$out" || { echo "FAIL: run $run ended without a PASS verdict:"; echo "$out"; exit 1; }
done
grep -q 'every phase has passed; nothing to do' <<<"$out" || { echo "FAIL: the second run did not find the deployment complete:"; echo "$out"; exit 1; }
# MODEL as the caller wrote it, relative to where the script was called (not the checkout).
out=$(cd "$T/build" && bash ../scripts/demo.sh demo-model/tiny-llama-ascii 2>&1) ||
  { echo "FAIL: demo.sh with a model path relative to the caller exited non-zero:"; echo "$out"; exit 1; }
grep -q 'every phase has passed; nothing to do' <<<"$out" || { echo "FAIL: the relative MODEL was not the deployed one:"; echo "$out"; exit 1; }
echo "PASS: demo.sh deploys on a first run and finds the deployment complete on a second"
