#!/usr/bin/env bash
# Document benchmarks against their Python baselines, in one run each:
# - extract_document on the committed 200-page PDF fixture against pypdf (CPU time,
#   median of 3; pypdf from target/fixtures-venv, made by scripts/fixtures/make.sh);
# - analyze_table's group-by on a generated 1M-row CSV against pandas (read_csv + groupby,
#   CPU and wall time, median of 3;
#   pandas installed into target/bench-venv from PyPI).
#
# The benches run in release and find their Python through PP_BENCH_PYTHON.
#
# Usage: bash scripts/bench-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/fixtures/make.sh --venv
PP_BENCH_PYTHON="$root/target/fixtures-venv/bin/python" \
  cargo bench --locked -p pp-docs --bench extract_pdf

PANDAS_VERSION=2.2.3
venv="$root/target/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" show pandas 2>/dev/null |
  grep -qx "Version: $PANDAS_VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pandas==$PANDAS_VERSION"
fi

PP_BENCH_PYTHON="$venv/bin/python" cargo bench --locked -p pp-docs --bench table_groupby
