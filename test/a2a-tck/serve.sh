#!/usr/bin/env bash
# The fixture agent for the official A2A conformance kit (a2aproject/a2a-tck, run by hand:
# docs/a2a.md, "The conformance kit"): starts test/a2a-tck/server.ts on its own secret and
# in-memory database, puts the token proxy (proxy.mjs) in front of it, prints the proxy's URL
# (the kit's --sut-host) and keeps both running until Ctrl-C.
#
#   test/a2a-tck/serve.sh [--unique-message-ids]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

export AUTH_JWT_SECRET="tck-$(node -e 'console.log(require("crypto").randomBytes(24).toString("hex"))')"
# The kit's webhook receiver listens on this machine's loopback.
export DATA_DIR=memory:// HOST=127.0.0.1 PORT=0 LOG_LEVEL=${LOG_LEVEL:-warn} WEBHOOK_ALLOW_PRIVATE=true
unset DATABASE_URL NODE_ENV

first_line() {
  local file=$1 name=$2
  for _ in $(seq 1 180); do
    if [ -s "$file" ]; then head -n 1 "$file"; return; fi
    sleep 1
  done
  echo "$name did not start; its output:" >&2
  cat "$file" >&2
  exit 1
}

node --import tsx test/a2a-tck/server.ts >"$work/server.out" &
pids+=($!)
server=$(first_line "$work/server.out" "the fixture agent")
token=$(npm run -s token -- --sub a2a-tck --scope "tasks:read tasks:write" --ttl 12h)
A2A_TOKEN="$token" node "$here/proxy.mjs" 0 "$server" "$@" >"$work/proxy.out" &
pids+=($!)
echo "$(first_line "$work/proxy.out" "the token proxy")"
wait
