#!/usr/bin/env bash
# Regenerates crates/pp-cli/startup.order: the functions a one-shot `run` (the first in
# a new data directory and one after it), an idle `serve`, `tasks list` and `--version`
# execute, which the release link puts next to each other (lld --symbol-ordering-file,
# see crates/pp-cli/build.rs) so a process maps a few megabytes of code instead of
# touching pages all over a 20 MB text section.
#
# Symbol names carry hashes of the build profile and of each crate's version, so the
# list is taken from the very build it orders: a build with its symbols kept
# (PP_KEEP_SYMBOLS=1; symbol names do not depend on link arguments). Run it after a
# Cargo.lock change, a change of the release profile, or when the shipped binary's
# resident memory grows (docs/performance.md). Needs valgrind (apt-get install -y
# valgrind), python3 and nm.
#
#   PP_ORDER_PROFILE  cargo profile to build and profile (default: release)
#   PP_ORDER_OUT      where the list goes (default: crates/pp-cli/startup.order)
#   PP_ORDER_BIN      profile this binary (built with its symbols) instead of building
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PP_ORDER_PROFILE:-release}
out=${PP_ORDER_OUT:-crates/pp-cli/startup.order}
if [ -n "${PP_ORDER_BIN:-}" ]; then
  bin=$PP_ORDER_BIN
else
  PP_KEEP_SYMBOLS=1 cargo build --profile "$profile" --locked -p pp-cli --bin pocketpilot
  bin=${CARGO_TARGET_DIR:-target}/$profile/pocketpilot
fi
# shellcheck source=scripts/loopback-setup.sh
source scripts/loopback-setup.sh
grind=(valgrind --tool=callgrind --demangle=no)
"${grind[@]}" --callgrind-out-file="$work/version.out" "$bin" --version >/dev/null 2>&1
"${grind[@]}" --callgrind-out-file="$work/run.out" "$bin" "${common[@]}" run --workspace "$work/ws" "Say hello" >/dev/null 2>&1
# A run in a data directory that exists (no migrations) takes paths the first does not.
"${grind[@]}" --callgrind-out-file="$work/again.out" "$bin" "${common[@]}" run --workspace "$work/ws" "Say hello" >/dev/null 2>&1
"${grind[@]}" --callgrind-out-file="$work/list.out" "$bin" "${common[@]}" tasks list >/dev/null 2>&1
serve_port=$(free_port)
# With its arena limit already set, `serve` does not start itself again (an `exec` that
# valgrind would not follow): the profile is of the serve that runs.
GLIBC_TUNABLES=glibc.malloc.arena_max=2 "${grind[@]}" --callgrind-out-file="$work/serve.out" "$bin" "${common[@]}" serve --port "$serve_port" --workspace "$work/ws" >/dev/null 2>&1 &
serve=$!
python3 scripts/wait-http.py "http://127.0.0.1:$serve_port/api/health" 60
sleep 3
kill -TERM "$serve"
wait "$serve" || true
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ {print $3}' >"$work/defined"
python3 - "$work" >"$out" <<'PY'
import re, sys
work = sys.argv[1]
defined = set(open(f"{work}/defined").read().split())
seen = set()
for name in ["version", "list", "run", "again", "serve"]:
    for line in open(f"{work}/{name}.out"):
        match = re.match(r"c?fn=\(\d+\) (\S+)", line)
        if match and match.group(1) in defined and match.group(1) not in seen:
            seen.add(match.group(1))
            print(match.group(1))
PY
echo "$out: $(wc -l <"$out") functions"
