#!/usr/bin/env bash
# Installs to a temporary prefix and compiles each public header alone against it
# (tests/install/headers); also checks that no installed header includes anything but
# system, dependency and llmport/ headers (issue #19: src/ stays private).
#   headers_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1" src="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
# A fixed place under the build tree (not mktemp): the same paths each run, so ccache
# (CCACHE_BASEDIR) serves the header compiles from the cache.
tmp="$build/tests/install/headers"
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
bad="$(grep -Hn '#include "' "$tmp/prefix/include/llmport/"*.hpp | grep -v '#include "llmport/' || true)"
[ -z "$bad" ] || fail "public headers include non-public headers: $bad"
n="$(ls "$tmp/prefix/include/llmport/"*.hpp | wc -l)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/tests/install/headers" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" "${launcher[@]}" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configure"; }
cmake --build "$tmp/build" -j2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "a header does not compile alone"; }
echo "headers: $n public headers compile alone against the installed tree"
