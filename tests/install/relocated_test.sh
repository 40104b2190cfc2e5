#!/usr/bin/env bash
# Installs the build to a temporary prefix, moves the prefix, and from another directory
# runs the installed `llmport --version`, `deploy` and `run` (issue #19): the binary must
# find its data under the moved prefix, write nothing there, and generate the golden text.
#   relocated_test.sh BUILD_DIR
set -euo pipefail
build="$1"
. "$(dirname "$0")/common.sh"
tmp="$(mktemp -d /tmp/llmport-relocated.XXXXXX)"  # outside the build tree: no source-tree fallback
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"
p="$tmp/moved"
mkdir "$tmp/elsewhere" && cd "$tmp/elsewhere"
unset LLMPORT_DATA_DIR

# Exactly the public headers, one library, the data.
[ -z "$(cd "$p/include" && find . -type f ! -path './llmport/*.hpp')" ] || fail "non-public files under include/"
libs="$(cd "$p" && find . -name 'libllmport*' -type f | sort)"
case "$libs" in ./lib/libllmport.a | ./lib/libllmport.so.*) ;; *) fail "expected one libllmport, got: $libs" ;; esac
for f in share/llmport/registry/cpu share/llmport/prompts/base.json share/llmport/tools/hf_reference.py share/llmport/tools/numpy_reference.py \
         lib/cmake/llmport/llmportConfig.cmake lib/pkgconfig/llmport.pc; do
  [ -e "$p/$f" ] || fail "$f not installed"
done

version="$("$p/bin/llmport" --version)"
grep -qxF "data dir: $p/share/llmport (installed)" <<<"$version" || fail "--version: $version"

before="$(cd "$p" && find . -printf '%p %s %T@\n' | sort)"
"$p/bin/llmport" deploy "$STORIES" --reference "golden:$GOLDEN" --workspace "$tmp/ws" --threads 1 --quick \
  >"$tmp/deploy.log" 2>&1 || { tail -20 "$tmp/deploy.log"; fail "installed llmport deploy exited $?"; }
grep -q '^Verdict: PASS$' "$tmp/ws/stories260k/docs/evaluation_report.md" || fail "deploy verdict not PASS"
out="$("$p/bin/llmport" run "$STORIES" --registry "$tmp/ws/stories260k/registry" --prompt "$GOLDEN_PROMPT" \
       -n 32 --ignore-eos --threads 1 2>/dev/null)"
[ "$out" = "$GOLDEN_TEXT" ] || fail "run printed '$out', golden '$GOLDEN_TEXT'"
after="$(cd "$p" && find . -printf '%p %s %T@\n' | sort)"
[ "$before" = "$after" ] || fail "deploy/run changed the installed prefix: $(diff <(echo "$before") <(echo "$after") | head -5)"
echo "relocated install: --version data dir, deploy PASS, run = golden, prefix untouched"
