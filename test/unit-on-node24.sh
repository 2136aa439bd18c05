#!/usr/bin/env bash
# The unit tests again on Node 24, the container image's runtime (deploy/Dockerfile), after the
# whole suite on the Node that runs `npm test`. What differs between runtimes shows there first:
# Node 24's Buffer.poolSize (64 KiB, 8 KiB before it) and its statSync, which takes a path under a
# file for an absent one, each broke a check of the router's that Node 20 passed.
#
# Node 24 needs glibc >= 2.38 for the uWebSockets.js build it loads (deploy.md, "Supported
# runtimes"): test/find-node.sh finds it as test/e2e/newer-node.test.ts does (ROUTER_TEST_NODE24, or
# one shared/tools/node-on-newer-glibc.sh assembles with Debian 13's C library). Without either, or
# when this already runs on Node 24, it says why and passes.
set -euo pipefail
cd "$(dirname "$0")/.."

if node --version | grep -q '^v24\.'; then
  echo "unit tests on Node 24: the suite above ran on $(node --version) already"
  exit 0
fi
# On success find-node.sh prints the path alone; else only why there is none.
if ! node24=$(bash test/find-node.sh 24 2>&1); then
  echo "unit tests on Node 24: skipped ($node24)"
  exit 0
fi
if [ ! -x "$node24" ]; then
  echo "unit tests on Node 24: skipped ($node24 is not an executable)"
  exit 0
fi
version=$("$node24" --version)
case "$version" in
  v24.*) ;;
  *) echo "unit tests on Node 24: $node24 is $version, not Node 24" >&2; exit 1 ;;
esac
echo "unit tests on Node 24: $node24 ($version)"
exec "$node24" node_modules/vitest/vitest.mjs run --config test/vitest.config.ts test/unit
