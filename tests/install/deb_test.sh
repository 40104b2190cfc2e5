#!/usr/bin/env bash
# `cpack -G DEB`, then dpkg -i the package, run the installed /usr/bin/llmport --version
# and `llmport check` on a shared config, and dpkg -r it again, also when a step fails
# (issue #19). Needs root (CI runs it: ctest -L deb).
#   deb_test.sh BUILD_DIR
set -euo pipefail
build="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
LLMPORT_SHARED="${LLMPORT_SHARED:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}"
[ "$(id -u)" = 0 ] || fail "dpkg -i needs root (run as root, e.g. in CI)"
! dpkg -s llmport >/dev/null 2>&1 || fail "a package llmport is already installed; not touching it"
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB >"$build/cpack.log" 2>&1) || { cat "$build/cpack.log"; fail "cpack -G DEB"; }
deb="$(ls "$build"/packages/llmport_*.deb)"
depends="$(dpkg-deb -f "$deb" Depends)"
# dpkg-shlibdeps derives these from what bin/llmport links.
for pkg in libc6 libstdc++6 libgomp1 libfmt9 libcurl4 libssl3 libpcre2-8-0 libutf8proc2 libicu72 libcpp-httplib0.11; do
  grep -q "\b$pkg\b" <<<"$depends" || fail "Depends lacks $pkg: $depends"
done

trap 'dpkg -r llmport >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null
version="$(/usr/bin/llmport --version)"
grep -qxF "data dir: /usr/share/llmport (installed)" <<<"$version" || fail "--version: $version"
cfg="$LLMPORT_SHARED/configs/llama-3.2-1b-instruct.json"
out="$(cd / && /usr/bin/llmport check "$cfg")" || fail "llmport check $cfg exited $?: $out"
grep -q "ACCEPT" <<<"$out" || fail "llmport check did not ACCEPT: $out"
dpkg -r llmport >/dev/null
trap - EXIT
[ ! -e /usr/bin/llmport ] && [ ! -e /usr/share/llmport ] || fail "dpkg -r left files behind"
echo "deb: $(basename "$deb") (Depends: $depends) installs, runs --version and check, removes"
