#!/bin/sh
# Maven's entry point: builds the agent with make (only what changed; the Makefile names the
# package to install when musl-gcc is missing) and copies the binary to the classpath path $1.
set -eu
cd "$(dirname "$0")"
if ! command -v make >/dev/null 2>&1; then
  echo "guest-agent: make is missing; install it with: apt-get install make" >&2
  exit 1
fi
make --no-print-directory
if [ $# -gt 0 ]; then
  mkdir -p "$(dirname "$1")"
  cp build/vivarium-agent "$1"
fi
