#!/usr/bin/env bash
# scripts/demo-report.sh, the end of the main job (scripts/demo.sh): on a stories260K
# deployment it prints the golden's 32-token story and phases 0-7 PASS; on a synthetic model
# with `synth --ascii-tokenizer` a printable-ASCII line past the prompt; it fails (exit 1) on a
# run that prints only the prompt or a control character, and refuses a non-workspace (2).
#   demo_report_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
. "$2/tests/install/common.sh"  # fail, $STORIES, $GOLDEN, $GOLDEN_TEXT
bin="$1/llmport"
report="$2/scripts/demo-report.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# A real model against its independent golden: the story is the golden's text.
"$bin" deploy "$STORIES" --reference "golden:$GOLDEN" --workspace "$tmp/ws" --threads 1 --quick \
  >"$tmp/deploy.log" 2>&1 || { tail -20 "$tmp/deploy.log"; fail "deploy stories260K exited $?"; }
bash "$report" "$tmp/ws/stories260k" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "report exited $?"; }
grep -qxF "$GOLDEN_TEXT" "$tmp/out" || { cat "$tmp/out"; fail "no golden story line"; }
for i in 0 1 2 3 4 5 6 7; do
  grep -qE "^phase $i +[A-Z][a-z -]+[a-z] +PASS$" "$tmp/out" || { cat "$tmp/out"; fail "phase $i not PASS"; }
done
grep -qxF "verdict    PASS (docs/evaluation_report.md)" "$tmp/out" || fail "verdict line"
grep -qxF "workspace  $tmp/ws/stories260k (README.md, deployment.json, docs/evaluation_report.md)" "$tmp/out" ||
  fail "workspace line"
grep -qxF "run        make -C $tmp/ws/stories260k run PROMPT='Once upon a time' N_TOKENS=32" "$tmp/out" || fail "run line"
grep -qxF "verify     make -C $tmp/ws/stories260k verify" "$tmp/out" || fail "verify line"
grep -qxF "bench      make -C $tmp/ws/stories260k bench" "$tmp/out" || fail "bench line"

# The default synthetic model: random weights, generated tokenizer, readable characters.
"$bin" synth --preset tiny-llama --out "$tmp/tiny" --seed 1 --ascii-tokenizer >/dev/null
"$bin" deploy "$tmp/tiny" --reference oracle --workspace "$tmp/ws" --threads 1 --quick \
  >"$tmp/deploy.log" 2>&1 || { tail -20 "$tmp/deploy.log"; fail "deploy tiny exited $?"; }
bash "$report" "$tmp/ws/tiny" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "report exited $?"; }
line="$(grep '^Once upon a time' "$tmp/out")" || fail "no generated line"
gen="${line#Once upon a time}"
[ -n "$gen" ] || fail "nothing generated past the prompt"
LC_ALL=C grep -qE '^[ -~]+$' <<<"$gen" || fail "generated '$gen' is not printable ASCII"
grep -qxF "verdict    PASS-with-warnings (docs/evaluation_report.md)" "$tmp/out" || fail "tiny verdict line"

# The check fails on a run that prints only the prompt, or a control character.
mkdir -p "$tmp/fake"
printf 'PROMPT ?= Once upon a time\nrun:\n\t@echo "Once upon a time"\n' >"$tmp/fake/Makefile"
rc=0; bash "$report" "$tmp/fake" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "prompt-only run: exit $rc, want 1"
grep -q "^error: $tmp/fake: generated text is empty or not printable UTF-8" "$tmp/out" || fail "prompt-only message"
printf 'PROMPT ?= Once upon a time\nrun:\n\t@printf "Once upon a time x\\001y\\n"\n' >"$tmp/fake/Makefile"
rc=0; bash "$report" "$tmp/fake" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "control character: exit $rc, want 1"
grep -qF "error: $tmp/fake: generated text is empty or not printable UTF-8: \$'Once upon a time x\\001y'" "$tmp/out" ||
  { cat "$tmp/out"; fail "control character message"; }
rc=0; bash "$report" "$tmp/nowhere" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "no workspace: exit $rc, want 2"
echo "demo report: stories260K golden story + phases 0-7 PASS; synthetic printable line; failing runs exit 1"
