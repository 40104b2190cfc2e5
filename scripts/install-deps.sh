#!/usr/bin/env bash
# Installs the Debian packages llmport builds against (see README.md "Dependencies").
# Packages already installed are not fetched again: with all of them present (a second
# `scripts/demo.sh`) apt is not run at all.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# clang, libclang-rt-14-dev (ASan/UBSan/LSan runtimes, libFuzzer), libomp-14-dev (OpenMP
# for clang), llvm-14 (llvm-symbolizer for sanitizer stack traces): the `asan` preset.
PKGS=(
  build-essential cmake pkg-config ccache git make python3 python3-jinja2 python3-numpy dpkg-dev file
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev libicu-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev
  curl nginx
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev libomp-14-dev llvm-14
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages are installed"
  exit 0
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
