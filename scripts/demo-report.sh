#!/usr/bin/env bash
# The end of the main job (scripts/demo.sh): run a deployment through its Makefile, check
# the generated line is non-empty printable UTF-8, and print it with a summary (phases and
# verdicts, the workspace, how to run, verify and bench it). Exit 1 when the check fails.
#   scripts/demo-report.sh WORKSPACE_DIR      # e.g. ./deployments/tiny-llama-ascii
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/demo-report.sh WORKSPACE_DIR" >&2; exit 2; }
WS=$1
[ -f "$WS/Makefile" ] || { echo "error: $WS/Makefile: no deployment workspace here" >&2; exit 2; }
# Greedy generation through the workspace's Makefile (a model without a tokenizer runs its
# default id prompt, PROMPT_IDS, and prints ids).
OUT=$(make --no-print-directory -s -C "$WS" run N_TOKENS=32)
PROMPT=$(sed -n 's/^PROMPT ?= //p' "$WS/Makefile")
GENERATED=${OUT#"$PROMPT"}
# The demo's promise: a non-empty line of printable UTF-8 (no control characters).
if [ -z "${GENERATED//[[:space:]]/}" ] || ! printf '%s' "$OUT" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 ||
   printf '%s' "$OUT" | tr -d '\n' | LC_ALL=C grep -q '[[:cntrl:]]'; then
  echo "error: $WS: generated text is empty or not printable UTF-8: $(printf '%q' "$OUT")" >&2
  exit 1
fi

echo
echo "== generated (make -C $WS run N_TOKENS=32) =="
printf "%s\n" "$OUT"
echo
echo "== summary =="
python3 - "$WS" <<'EOF'
import json, sys
ws = sys.argv[1]
d = json.load(open(f"{ws}/deployment.json"))
m = d["model"]
print(f"model      {m['repo_id'] or m['path']} ({m['architecture']}); target {d['target']}, dtype {d['dtype']}, "
      f"reference {d['reference']['kind']}")
for p in d["phases"]:
    print(f"phase {p['phase']}    {p['name']:<24} {p['status']}")
verdict = next((l.split(":", 1)[1].strip() for l in open(f"{ws}/docs/evaluation_report.md")
                if l.startswith("Verdict:")), "none recorded")
print(f"verdict    {verdict} (docs/evaluation_report.md)")
EOF
RUN="make -C $WS run N_TOKENS=32"
[ -z "$PROMPT" ] || RUN="make -C $WS run PROMPT='$PROMPT' N_TOKENS=32"
cat <<EOF
workspace  $WS (README.md, deployment.json, docs/evaluation_report.md)
run        $RUN
verify     make -C $WS verify
bench      make -C $WS bench
EOF
