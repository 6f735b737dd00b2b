#!/usr/bin/env bash
# The whole test suite: Rust tests, the eval cases, and the console's browser tests.
# Browser tests need Node and Debian's Chromium (/usr/bin/chromium); without them they are
# skipped with a message, except under CI (CI=true), where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
cargo run --locked -q -p pp-cli -- eval evals/cases

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
