#!/usr/bin/env bash
# Builds examples/ against the installed package in a separate CMake project
# (find_package(llmport)) and with pkg-config, runs both on stories260K and compares their
# output with the golden text (issue #19).
#   example_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1" src="$2"
. "$(dirname "$0")/common.sh"
# A fixed place under the build tree (not mktemp): the same paths each run, so ccache
# (CCACHE_BASEDIR) serves the example's compile from the cache.
tmp="$build/tests/install/example"
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"  # the package config and .pc must not name the old prefix
p="$tmp/moved"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/examples" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "find_package(llmport) configure"; }
cmake --build "$tmp/build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "example build"; }
out="$(cd "$tmp" && OMP_NUM_THREADS=1 "$tmp/build/generate" "$STORIES" "$GOLDEN_PROMPT" 32)"
[ "$out" = "$GOLDEN_TEXT" ] || fail "example (CMake) printed '$out', golden '$GOLDEN_TEXT'"

export PKG_CONFIG_PATH="$p/lib/pkgconfig"
[ "$(pkg-config --variable=includedir llmport)" -ef "$p/include" ] || fail "llmport.pc includedir"
cxx=(c++)
command -v ccache >/dev/null && cxx=(ccache c++)
# shellcheck disable=SC2046
"${cxx[@]}" -O1 "$src/examples/generate.cpp" -o "$tmp/generate-pc" \
  $(pkg-config --cflags --libs llmport) || fail "example build with pkg-config"
# A shared libllmport (-DBUILD_SHARED_LIBS=ON) in a prefix off the loader's path: a
# pkg-config build carries no rpath, so the loader is told where the prefix's lib is.
out="$(LD_LIBRARY_PATH="$p/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS=1 "$tmp/generate-pc" "$STORIES" "$GOLDEN_PROMPT" 32)"
[ "$out" = "$GOLDEN_TEXT" ] || fail "example (pkg-config) printed '$out'"
echo "example: find_package(llmport) and pkg-config builds print the golden text"
