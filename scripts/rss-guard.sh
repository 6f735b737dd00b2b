#!/usr/bin/env bash
# CI's resident-memory guard (docs/performance.md, "Resident memory"): peak RSS does not
# vary between machines the way time does, so CI holds it. Builds the `ci-release`
# profile (the shipped profile without whole-program LTO, within 1 MiB of the shipped
# binary), orders its start-up functions as the release link does (its own list: symbol
# names carry the profile's hash), then measures against the loopback model
# (scripts/loopback-model.py):
#   - a one-shot `run`: peak RSS, the largest of three runs (the first one creates the
#     data directory and its database);
#   - an idle `serve` (two worker threads, as always): peak RSS once it answers, after 2 s;
# both with the binary's pages read from disk, as after a reboot (see below).
# Fails above PP_RSS_LIMIT_KIB (default 12288 = 12 MiB), printing every figure.
# Needs GNU time (/usr/bin/time), valgrind and nm (for scripts/startup-order.sh) and
# python3.
#
#   PP_RSS_BIN  measure this binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "rss-guard: needs GNU time (apt-get install -y time)" >&2; exit 1; }
limit=${PP_RSS_LIMIT_KIB:-12288}
if [ -n "${PP_RSS_BIN:-}" ]; then
  bin=$PP_RSS_BIN
else
  target=${CARGO_TARGET_DIR:-$PWD/target}
  mkdir -p "$target"
  order=$target/ci-release.order
  PP_ORDER_PROFILE=ci-release PP_ORDER_OUT="$order" bash scripts/startup-order.sh
  PP_ORDER_FILE=$order cargo build --profile ci-release --locked -p pp-cli --bin pocketpilot
  bin=$target/ci-release/pocketpilot
fi
# shellcheck source=scripts/loopback-setup.sh
source scripts/loopback-setup.sh

# The binary as a start after a reboot finds it: read from disk, not as the linker (or a
# copy) just wrote it (a freshly written binary peaks 1.2-1.6 MiB higher until its pages
# are evicted: docs/performance.md). Writing the file back and dropping its clean pages
# makes the figure that of the installed binary.
python3 scripts/drop-page-cache.py "$bin"

# Peak RSS of one run, in KiB, by GNU time: the figure is the child's ru_maxrss, which
# counts the memory of the process it was forked from (a Python parent would add its own
# 10 MiB), so the parent must be small. Fails if the run fails or does not answer.
peak() {
  local out=$work/peak.out err=$work/peak.err
  if ! /usr/bin/time -f '%M' -o "$work/peak.kib" "$@" >"$out" 2>"$err" || ! grep -q 'Hello!' "$out"; then
    echo "rss-guard: $* failed: $(cat "$err")" >&2
    return 1
  fi
  cat "$work/peak.kib"
}
run_kib=0
for _ in 1 2 3; do
  kib=$(peak "$bin" "${common[@]}" run --workspace "$work/ws" "Say hello")
  [ "$kib" -gt "$run_kib" ] && run_kib=$kib
done

serve_port=$(free_port)
"$bin" "${common[@]}" serve --port "$serve_port" --workspace "$work/ws" >"$work/serve.log" 2>&1 &
serve=$!
python3 scripts/wait-http.py "http://127.0.0.1:$serve_port/api/health" 60
sleep 2
serve_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$serve/status")
kill -TERM "$serve"
wait "$serve" || true

size=$(stat -c %s "$bin")
printf 'rss-guard: %s (%s bytes)\n' "$bin" "$size"
status=0
for figure in "run:$run_kib" "serve:$serve_kib"; do
  name=${figure%%:*} kib=${figure#*:}
  mib=$(python3 -c "print(f'{$kib/1024:.1f}')")
  if [ "$kib" -gt "$limit" ]; then
    echo "rss-guard: FAIL: $name peak RSS $kib KiB ($mib MiB) is above $limit KiB"
    status=1
  else
    echo "rss-guard: ok: $name peak RSS $kib KiB ($mib MiB), limit $limit KiB"
  fi
done
exit "$status"
