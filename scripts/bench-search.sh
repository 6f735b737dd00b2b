#!/usr/bin/env bash
# search_files on a generated 10,000-file tree (crates/pp-tools/benches/search.rs): the
# median, fastest and slowest of 7 runs for literal, regex, no-match, capped, context,
# glob and one-folder searches. Release build; prints plain text.
#
# Usage: bash scripts/bench-search.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked -p pp-tools --bench search
