#!/usr/bin/env bash
# Completes crates/pp-cli/startup.order with what native starts execute that the list
# misses. scripts/startup-order.sh profiles under valgrind, where threads run one at a
# time and fifty times slower, so a native start takes paths (a future ready or not yet,
# a woken thread, a pool that has a thread or not) the profile never saw, and functions
# whose names changed since the list was taken are not in it either; each such function
# costs a start the 64 KiB window of code the kernel maps around it. This script counts
# the page faults of native starts (`--version`, a one-shot `run` in a new and in an
# existing data directory, `tasks list`, an idle `serve`), each with the binary's pages
# dropped from the page cache so every first touch faults, and prints the functions
# whose code faulted and that the list does not name, in the order they faulted. Append
# them to the list, link again, and measure (docs/performance.md, "Which pages the
# kernel maps"). Needs perf (apt-get install -y linux-perf), python3 and GNU time.
#
#   scripts/startup-faults.sh BIN [LIST]   BIN: a release build with its symbols kept
#                                           (PP_KEEP_SYMBOLS=1) linked with LIST
#                                           (default crates/pp-cli/startup.order)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1")
list=$(realpath "${2:-crates/pp-cli/startup.order}")
# shellcheck source=scripts/loopback-setup.sh
source scripts/loopback-setup.sh
drop() {
  python3 scripts/drop-page-cache.py "$bin"
}
faults() {
  local out=$1
  shift
  drop
  perf record -q -e page-faults -c 1 -d -o "$work/$out.data" -- "$@" >/dev/null 2>&1
}
faults version "$bin" --version
faults run "$bin" "${common[@]}" run --workspace "$work/ws" "Say hello"
faults again "$bin" "${common[@]}" run --workspace "$work/ws" "Say hello"
faults list "$bin" "${common[@]}" tasks list
serve_port=$(free_port)
drop
perf record -q -e page-faults -c 1 -d -o "$work/serve.data" -- \
  "$bin" "${common[@]}" serve --port "$serve_port" --workspace "$work/ws" >/dev/null 2>&1 &
recorder=$!
python3 scripts/wait-http.py "http://127.0.0.1:$serve_port/api/health" 60
sleep 2
# perf passes the interrupt on to `serve`, which stops; then perf writes its data.
kill -INT "$recorder"
wait "$recorder" || true
# The filter is a file: a heredoc would take the place of the pipe as its input.
cat >"$work/faulted.py" <<'PY'
import re, sys
binary, listed = sys.argv[1], set(open(sys.argv[2]).read().split())
seen = set()
# "ADDR SYM (DSO) IP SYM (DSO)": a fault on code is one whose address is the instruction's.
line_re = re.compile(r"\s*([0-9a-f]+)\s+\S+\s+\(\S+\)\s+([0-9a-f]+)\s+(\S+)\s+\((\S+)\)")
for line in sys.stdin:
    match = line_re.match(line)
    if not match:
        continue
    addr, ip, symbol, dso = match.groups()
    if addr == ip and dso == binary and symbol != "[unknown]" and symbol not in listed and symbol not in seen:
        seen.add(symbol)
        print(symbol)
PY
for name in version run again list serve; do
  perf script --no-demangle -i "$work/$name.data" -F ip,addr,sym,dso 2>/dev/null
done | python3 "$work/faulted.py" "$bin" "$list"
