#!/usr/bin/env bash
# API fuzzing: schemathesis against /api/openapi.json on a running `pocketpilot serve`.
#
# Starts `serve --port 0 --script` on a temporary home and workspace, runs schemathesis
# authenticated with the server's token (Host is 127.0.0.1, no Origin: both pass the
# server's checks), 50 examples per operation, the SSE routes excluded, and fails on any
# 5xx or any response that does not match the document. Stops the server at the end and
# exits non-zero on any failure.
#
# Usage: bash scripts/fuzz-api.sh [extra schemathesis options]
# Env:   FUZZ_MAX_EXAMPLES (default 50), FUZZ_SEED (default: random; printed by schemathesis)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SCHEMATHESIS_VERSION=4.32.5
venv="$root/target/fuzz-venv"
if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/pip" show schemathesis 2>/dev/null |
  grep -qx "Version: $SCHEMATHESIS_VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

cargo build --locked -q -p pp-cli
binary="$root/target/debug/pocketpilot"

scratch=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

mkdir -p "$scratch/home" "$scratch/workspace"
printf 'hello\n' >"$scratch/workspace/notes.txt"
# Every task reads a file, asks to write one (so approvals exist), then finishes.
cat >"$scratch/script.json" <<'JSON'
[
  {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
  {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]},
  {"content": "done"}
]
JSON

"$binary" --home "$scratch/home" serve --port 0 \
  --workspace "$scratch/workspace" --script "$scratch/script.json" \
  >"$scratch/serve.out" 2>"$scratch/serve.err" &
server_pid=$!

# serve prints `PocketPilot console: http://127.0.0.1:PORT/login?token=TOKEN` once bound.
login=""
for _ in $(seq 1 300); do
  login=$(grep -o 'http://127\.0\.0\.1:[0-9]*/login?token=[A-Za-z0-9_-]*' "$scratch/serve.out" || true)
  [ -n "$login" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "fuzz-api: serve exited early:" >&2
    cat "$scratch/serve.err" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$login" ]; then
  echo "fuzz-api: serve printed no login link" >&2
  cat "$scratch/serve.err" >&2
  exit 1
fi
base=${login%%/login*}
token=${login##*token=}

seed=()
if [ -n "${FUZZ_SEED:-}" ]; then
  seed=(--seed "$FUZZ_SEED")
fi
status=0
# Run from the scratch folder: schemathesis keeps its caches in the current directory.
(cd "$scratch" && "$venv/bin/schemathesis" run "$base/api/openapi.json" \
  --url "$base" \
  --header "Authorization: Bearer $token" \
  --exclude-path-regex '/events$' \
  --max-examples "${FUZZ_MAX_EXAMPLES:-50}" \
  --checks not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance \
  --request-timeout 30 \
  --workers 2 \
  --no-color \
  "${seed[@]}" "$@") || status=$?

if grep -q 'pp-server:' "$scratch/serve.err"; then
  echo "fuzz-api: the server logged internal errors:" >&2
  grep 'pp-server:' "$scratch/serve.err" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "fuzz-api: FAILED (exit $status)" >&2
else
  echo "fuzz-api: passed"
fi
exit "$status"
