#!/usr/bin/env bash
# The cost of a command's workspace snapshot (docs/revert.md, "Cost"): 10,000 files of
# 100 KiB (1 GiB) walked, measured, and kept by FICLONE and by copy
# (crates/pp-tools/benches/snapshot.rs). Prints plain text.
#
# Usage: bash scripts/snapshot-bench.sh [DIR]
#   DIR: where the workspace and the store are made (default: a temp folder). For
#   reflinks, a filesystem that has them; as root, --xfs makes one: a 3 GiB XFS image
#   with reflink=1 (xfsprogs), loop-mounted, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-}"
cleanup() { :; }
if [[ "$dir" == "--xfs" ]]; then
  image="$(mktemp -d)/xfs.img"
  mount_point="$(mktemp -d)"
  truncate -s 3G "$image"
  mkfs.xfs -q -m reflink=1 "$image"
  mount -o loop "$image" "$mount_point"
  cleanup() { umount "$mount_point"; rm -f "$image"; rmdir "$mount_point"; }
  trap cleanup EXIT
  dir="$mount_point/bench"
fi
# The bench profile without fat LTO: the figures are I/O and SHA-256, not inlining.
CARGO_PROFILE_BENCH_LTO=false CARGO_PROFILE_BENCH_CODEGEN_UNITS=16 \
  cargo bench --locked -p pp-tools --bench snapshot -- ${dir:+"$dir"}
