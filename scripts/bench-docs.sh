#!/usr/bin/env bash
# Document benchmarks against their Python baselines, in one run each:
# analyze_table's group-by on a generated 1M-row CSV against pandas (read_csv + groupby).
#
# Installs pandas into target/bench-venv (PyPI) and runs the bench binaries in release;
# the benches find that venv's python themselves (or PP_BENCH_PYTHON).
#
# Usage: bash scripts/bench-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

PANDAS_VERSION=2.2.3
venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show pandas 2>/dev/null |
  grep -qx "Version: $PANDAS_VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pandas==$PANDAS_VERSION"
fi

PP_BENCH_PYTHON="$venv/bin/python" cargo bench --locked -p pp-docs --bench table_groupby
