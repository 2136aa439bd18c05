#!/usr/bin/env bash
# The unit tests again on Node 24, the container image's runtime (deploy/Dockerfile), after the
# whole suite on the Node that runs `npm test`, and the end-to-end files of the parts a runtime
# changes under the router (E2E below). What differs between runtimes shows there first: Node 24's
# Buffer.poolSize (64 KiB, 8 KiB before it) and its statSync, which takes a path under a file for
# an absent one, each broke a check of the router's that Node 20 passed.
#
# The end-to-end files start the built router on this Node 24 (the tests' own Node), so it loads the
# uws-20.57 build: its HTTP parser and TLS (front-framing, errors, body-too-large, tls-listener,
# openai-sdk-errors), the upstream client on Node's sockets (upstream-answers, stream-usage-cut-shapes),
# a body parsed in a thread from shared memory (large-body-thread-parse), both logs written to a pipe
# and to a real journald (access-log-pipe, access-log-journal, ops-log-journal; the journal ones need
# root, else skipped) and ioredis against a real redis-server (rate-limit-global-setup). About 20 s
# on two CPUs; the whole suite on Node 24 takes as long as on Node 20, which npm test cannot afford twice.
#
# Node 24 needs glibc >= 2.38 for the uWebSockets.js build it loads (deploy.md, "Supported
# runtimes"): test/find-node.sh finds it as test/e2e/newer-node.test.ts does (ROUTER_TEST_NODE24, or
# one shared/tools/node-on-newer-glibc.sh assembles with Debian 13's C library). Without either, or
# when this already runs on Node 24, it says why and passes.
set -euo pipefail
cd "$(dirname "$0")/.."

E2E=(
  test/e2e/front-framing.test.ts test/e2e/errors.test.ts test/e2e/body-too-large.test.ts
  test/e2e/tls-listener.test.ts test/e2e/openai-sdk-errors.test.ts test/e2e/upstream-answers.test.ts
  test/e2e/stream-usage-cut-shapes.test.ts test/e2e/large-body-thread-parse.test.ts
  test/e2e/access-log-pipe.test.ts test/e2e/access-log-journal.test.ts test/e2e/ops-log-journal.test.ts
  test/e2e/rate-limit-global-setup.test.ts
)

if node --version | grep -q '^v24\.'; then
  echo "tests on Node 24: the suite above ran on $(node --version) already"
  exit 0
fi
# On success find-node.sh prints the path alone; else only why there is none.
if ! node24=$(bash test/find-node.sh 24 2>&1); then
  echo "tests on Node 24: skipped ($node24)"
  exit 0
fi
if [ ! -x "$node24" ]; then
  echo "tests on Node 24: skipped ($node24 is not an executable)"
  exit 0
fi
version=$("$node24" --version)
case "$version" in
  v24.*) ;;
  *) echo "tests on Node 24: $node24 is $version, not Node 24" >&2; exit 1 ;;
esac
echo "tests on Node 24: $node24 ($version): the unit tests and ${#E2E[@]} end-to-end files"
exec "$node24" node_modules/vitest/vitest.mjs run --config test/vitest.config.ts test/unit "${E2E[@]}"
