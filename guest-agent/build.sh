#!/bin/sh
# Maven's entry point: builds the agent with make (only what changed) and copies the binary to
# the classpath location given as $1. Fails with the package to install when a tool is missing.
set -eu
cd "$(dirname "$0")"
for tool in make musl-gcc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    case "$tool" in
      make) pkg=make ;;
      *) pkg=musl-tools ;;
    esac
    echo "guest-agent: $tool is missing; install it with: apt-get install $pkg" >&2
    exit 1
  fi
done
make --no-print-directory
if [ $# -gt 0 ]; then
  mkdir -p "$(dirname "$1")"
  cp build/vivarium-agent "$1"
fi
