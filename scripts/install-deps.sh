#!/usr/bin/env bash
# Installs the Debian packages llmport builds against (see README.md "Dependencies").
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config ccache git make python3 \
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev \
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev \
  curl \
  libgtest-dev libgmock-dev libbenchmark-dev >/dev/null
