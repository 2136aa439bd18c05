#!/usr/bin/env bash
# The path of a Node.js binary of major version $1 on a glibc >= 2.38 (the uWebSockets.js 20.57
# build's): the one ROUTER_TEST_NODE<major> names, else one shared/tools/node-on-newer-glibc.sh
# assembles with Debian 13's C library. Prints the path (exit 0), or why there is none on stderr
# (exit 1). For test/e2e/newer-node.test.ts and test/on-node24.sh, which check what it found.
set -uo pipefail
major=$1
root=$(cd "$(dirname "$0")/.." && pwd)
var=ROUTER_TEST_NODE$major
given=${!var:-}
if [ -n "$given" ]; then
  if [ -e "$given" ]; then echo "$given"; exit 0; fi
  echo "$var=$given does not exist" >&2
  exit 1
fi
platform=$(uname -s)-$(uname -m)
if [ "$platform" != Linux-x86_64 ]; then
  echo "the tool builds a linux-x64 runtime, this is $platform" >&2
  exit 1
fi
for tool in "$root/../shared/tools/node-on-newer-glibc.sh" /work/shared/tools/node-on-newer-glibc.sh; do
  [ -f "$tool" ] || continue
  if out=$(bash "$tool" "$major" 2>&1); then
    printf '%s\n' "$out" | tail -n 1
    exit 0
  fi
  echo "$tool failed: $(printf '%s\n' "$out" | tail -n 1)" >&2
  exit 1
done
echo "shared/tools/node-on-newer-glibc.sh not found" >&2
exit 1
