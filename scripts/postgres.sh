#!/usr/bin/env bash
# A private PostgreSQL cluster for the store's conformance suite (docs/testing.md).
#
#   scripts/postgres.sh start DIR PORT   initdb DIR/data (once), start it on
#                                        127.0.0.1:PORT with its socket in DIR, wait until
#                                        it accepts connections, create the database
#                                        `pocketpilot` (once), print its URL
#   scripts/postgres.sh stop DIR         stop it (fast shutdown); the data stays
#
# initdb refuses to run as root: as root the cluster belongs to the `postgres` user
# (runuser -u postgres), otherwise to the caller. When that user cannot reach DIR (a
# checkout under /root), the cluster lives in a temporary directory DIR/location names.
# Uses Debian's binaries (/usr/lib/postgresql/<newest>/bin) or, failing that, initdb and
# pg_ctl on PATH. A throwaway test cluster: trust auth on 127.0.0.1 only, fsync off.
set -euo pipefail

usage() { echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2; }

bin_dir() {
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$newest" ] && [ -x "$newest/initdb" ]; then
    echo "$newest"
  elif command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
  else
    echo "initdb not found: install PostgreSQL (apt-get install postgresql)" >&2
    exit 1
  fi
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

[ $# -ge 2 ] || usage
command=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
bin=$(bin_dir)

# Where the cluster lives: DIR itself, or the directory DIR/location names.
cluster_dir() {
  if [ -f "$dir/location" ]; then cat "$dir/location"; else echo "$dir"; fi
}

case "$command" in
  start)
    [ $# -eq 3 ] || usage
    port=$3
    if [ "$(id -u)" = 0 ] && [ ! -f "$dir/location" ]; then
      chown postgres: "$dir"
      if ! runuser -u postgres -- test -w "$dir"; then
        elsewhere=$(mktemp -d "${TMPDIR:-/tmp}/pocketpilot-pg.XXXXXX")
        chown postgres: "$elsewhere"
        echo "$elsewhere" >"$dir/location"
      fi
    fi
    cluster=$(cluster_dir)
    if [ ! -f "$cluster/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$cluster/data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
    fi
    if ! as_owner "$bin/pg_ctl" -D "$cluster/data" status >/dev/null 2>&1; then
      as_owner "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w -t 60 start \
        -o "-p $port -k $cluster -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" \
        >/dev/null
    fi
    # pg_ctl -w waits for the server; pg_isready confirms it takes TCP connections.
    for _ in $(seq 1 60); do
      if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
        server=(-h 127.0.0.1 -p "$port" -U postgres)
        if [ -z "$("$bin/psql" "${server[@]}" -d postgres -tAc \
          "SELECT 1 FROM pg_database WHERE datname = 'pocketpilot'")" ]; then
          "$bin/createdb" "${server[@]}" pocketpilot
        fi
        echo "postgres://postgres@127.0.0.1:$port/pocketpilot"
        exit 0
      fi
      sleep 1
    done
    echo "PostgreSQL on port $port did not become ready; see $cluster/server.log" >&2
    exit 1
    ;;
  stop)
    [ $# -eq 2 ] || usage
    cluster=$(cluster_dir)
    if [ -f "$cluster/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$cluster/data" -m fast -w stop >/dev/null
    fi
    ;;
  *) usage ;;
esac
