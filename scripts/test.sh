#!/usr/bin/env bash
# The whole test suite: Rust tests, the eval cases, the fault and load runs (reduced
# sizes; see docs/testing.md for the full ones), API fuzzing with schemathesis, and the
# console's browser tests.
# Browser tests need Node and Debian's Chromium (/usr/bin/chromium); without them they are
# skipped with a message, except under CI (CI=true), where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# The real MCP servers the MCP tests start (crates/pp-mcp/tests/servers, from the
# committed lockfile; the tests fail under CI without them).
(cd crates/pp-mcp/tests/servers && npm ci --silent --no-audit --no-fund)
# The Python MCP server the sandbox tests start (crates/pp-mcp/tests/servers/python, the
# official SDK pinned in its requirements.txt), in a venv of its own: target/mcp-venv
# (the tests fail under CI without it).
if [ ! -x target/mcp-venv/bin/python ] ||
  ! target/mcp-venv/bin/pip freeze --disable-pip-version-check 2>/dev/null |
  grep -qxF -f crates/pp-mcp/tests/servers/python/requirements.txt; then
  python3 -m venv target/mcp-venv
  target/mcp-venv/bin/pip install --quiet --disable-pip-version-check \
    -r crates/pp-mcp/tests/servers/python/requirements.txt
fi
# The store's conformance suite runs on SQLite and, here, on PostgreSQL too: a private
# cluster in target/pg (scripts/postgres.sh, port PP_TEST_POSTGRES_PORT or 55432), stopped
# on exit. An explicit PP_TEST_POSTGRES_URL is used as is. Without PostgreSQL installed the
# PostgreSQL runs are skipped with a message, except under CI (docs/testing.md).
if [ -z "${PP_TEST_POSTGRES_URL:-}" ]; then
  if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; then
    trap 'bash scripts/postgres.sh stop target/pg' EXIT
    PP_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start target/pg "${PP_TEST_POSTGRES_PORT:-55432}")
    export PP_TEST_POSTGRES_URL
  elif [ "${CI:-}" = "true" ]; then
    echo "the store's PostgreSQL runs need initdb (apt-get install postgresql)" >&2
    exit 1
  else
    echo "skipping the store's PostgreSQL runs: install postgresql (initdb) to run them"
  fi
fi
cargo test --workspace --locked
cargo run --locked -q -p pp-cli -- eval evals/cases

# Fault and load runs: bounded loops that fail on any lost approval, double execution or
# lost event (docs/testing.md).
cargo build --locked -q -p pp-cli -p pp-test-support --bins
target/debug/soak --tasks 20 --kills 10 --max-secs 300
target/debug/load --tasks 200 --sse-clients 50 --max-secs 300
# The team test: serve A, serve B and worker C on one PostgreSQL schema, 1000 tasks, half
# approved by two racing approvers, the worker SIGKILLed at ~30 % (docs/testing.md).
if [ -n "${PP_TEST_POSTGRES_URL:-}" ]; then
  target/debug/team-soak --tasks 1000 --processes 3 --kill --store-url "$PP_TEST_POSTGRES_URL" --max-secs 900
else
  echo "skipping team-soak: it needs PostgreSQL (PP_TEST_POSTGRES_URL)"
fi

# docs/team.md's PostgreSQL set-up, walked as written (scripts/docs-walk-team.sh): a
# cluster of its own standing in for Debian's apt cluster (port PP_DOCS_WALK_PORT, default
# 55451), so the store's cluster above is not touched. It runs the page's `runuser -u
# postgres` commands, so it needs root (CI runs as root) and PostgreSQL's binaries.
if [ "$(id -u)" = 0 ] && compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  bash scripts/docs-walk-team.sh
elif [ "${CI:-}" = "true" ]; then
  echo "the walk of docs/team.md needs root and PostgreSQL (apt-get install postgresql)" >&2
  exit 1
else
  echo "skipping the walk of docs/team.md: it needs root and PostgreSQL"
fi

# API fuzzing against /api/openapi.json (installs schemathesis into target/fuzz-venv).
bash scripts/fuzz-api.sh

if [ -f e2e/package.json ]; then
  if command -v node >/dev/null 2>&1 && [ -x /usr/bin/chromium ]; then
    cargo build --locked -q -p pp-cli
    (cd e2e && npm ci --silent --no-audit --no-fund && npm test --silent)
  elif [ "${CI:-}" = "true" ]; then
    echo "browser tests need node and /usr/bin/chromium (apt-get install chromium)" >&2
    exit 1
  else
    echo "skipping the console's browser tests: install node and chromium to run them"
  fi
fi
