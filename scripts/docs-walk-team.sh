#!/usr/bin/env bash
# Walks docs/team.md's PostgreSQL set-up as written (issue 29, item 7): the page's blocks
# marked `<!-- walk: ID -->` run in the page's order, in this shell (so the page's
# `export PGHOST=…` carries on to later blocks, as in an admin's terminal), against a
# private cluster that stands in for Debian's apt cluster. Between the blocks it checks
# what the page promises, on the real database and processes. Any command of a block that
# fails fails the walk.
#
#   scripts/docs-walk-team.sh [--keep]      needs root (the page runs `runuser -u postgres`),
#                                           PostgreSQL's binaries and target/debug/pocketpilot
#                                           (cargo build -p pp-cli); --keep leaves the files
#
# The stand-in for apt's cluster: initdb as the `postgres` user with apt's authentication
# (`peer` on the socket, `scram-sha-256` over TCP), port PP_DOCS_WALK_PORT (default 55451)
# on 127.0.0.1, its socket in a temporary directory; TLS is off at first and then turned
# on with a certificate for 127.0.0.1 from a CA made here, which the pocketpilot commands
# trust through SSL_CERT_FILE (the page's "TLS modes"). The only substitutions in the
# page's text, each a name of the machine:
#
#   /var/run/postgresql -> the cluster's socket directory   (apt's socket)
#   5432                -> PP_DOCS_WALK_PORT                  (apt's port)
#   db.internal         -> 127.0.0.1                          (the database's host name)
#   /etc/pocketpilot    -> WALK/etc/pocketpilot, /srv/finance -> WALK/srv/finance
#   `… serve`           -> `… serve --port 0 --script WALK/script.json` (a free port; the
#                          tasks replay a script instead of calling the model)
#
# `pocketpilot` is target/debug/pocketpilot (on PATH); "machine A" (setup, serve) and
# "machine B" (worker) are two data directories; OPENAI_API_KEY is set to a dummy (the
# page's `[model]` names it; no model is called).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
page=$root/docs/team.md
port=${PP_DOCS_WALK_PORT:-55451}
keep=${1:-}
started=$(date +%s)

fail() { echo "docs-walk-team: FAILED: $*" >&2; exit 1; }
say() { echo "docs-walk-team: $*"; }

[ "$(id -u)" = 0 ] || fail "run it as root: the page's commands use runuser -u postgres"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || fail "PostgreSQL is not installed (apt-get install postgresql)"
[ -x target/debug/pocketpilot ] || fail "build it first: cargo build -p pp-cli"
# `createuser --pwprompt` reads the terminal when there is one: the walk runs without one
# (setsid), so it types the password on stdin; and within PP_DOCS_WALK_MAX_SECS (default
# 180): a command the page gets wrong may wait for a password forever, and `timeout`
# ends the walk's whole process group then.
if [ -z "${PP_DOCS_WALK_INNER:-}" ]; then
  PP_DOCS_WALK_INNER=1 exec setsid -w timeout -k 10 "${PP_DOCS_WALK_MAX_SECS:-180}" bash "$root/scripts/docs-walk-team.sh" "$@"
fi
trap 'echo "docs-walk-team: FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'fail "stopped (a command waiting for input? PP_DOCS_WALK_MAX_SECS)"' TERM INT

walk=$(mktemp -d "${TMPDIR:-/tmp}/pp-docs-walk.XXXXXX")
chmod 755 "$walk"
mkdir -p "$walk/run" "$walk/srv/finance" "$walk/xdg" "$walk/tls"
data=$walk/pgdata
mkdir -m 700 "$data"
chown postgres: "$walk/run" "$data"
pids=()
cleanup() {
  local code=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -f "$data/postmaster.pid" ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ $code -ne 0 ]; then
    for log in "$walk"/*.log "$walk"/*.out "$walk/run/postgres.log"; do [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }; done >&2
  fi
  if [ "$keep" = --keep ] || [ $code -ne 0 ]; then
    echo "docs-walk-team: files kept in $walk" >&2
  else
    rm -rf "$walk"
  fi
}
trap cleanup EXIT

# --- The page's blocks -----------------------------------------------------------------

# The marker lines' IDs, in the page's order.
markers() { sed -n 's/^ *<!-- walk: \([^ ]*\)\( [^ ]*\)\? -->$/\1\2/p' "$page"; }

# The text of the fenced block after the marker `<!-- walk: ID -->` (its indentation
# removed), with the substitutions above.
block() {
  awk -v want="<!-- walk: $1 -->" '
    { line = $0; sub(/^ +/, "", line) }
    state == 0 && line == want { state = 1; next }
    state == 1 && line ~ /^```/ { state = 2; match($0, /^ */); indent = RLENGTH; next }
    state == 2 && line ~ /^```$/ { exit }
    state == 2 { print substr($0, indent + 1) }
  ' "$page" | sed \
    -e "s#/var/run/postgresql#$walk/run#g" \
    -e "s#\\b5432\\b#$port#g" \
    -e "s#db\\.internal#127.0.0.1#g" \
    -e "s#/etc/pocketpilot#$walk/etc/pocketpilot#g" \
    -e "s#/srv/finance#$walk/srv/finance#g"
}

# Runs the block ID in this shell (set -e: a failing command ends the walk).
walked=()
run_block() {
  local text
  text=$(block "$1")
  [ -n "$text" ] || fail "docs/team.md has no block <!-- walk: $1 -->"
  walked+=("$1")
  say "block $1"
  eval "$text" <"${2:-/dev/null}"
}

# Writes the block `file NAME` to NAME.
file_block() {
  local text
  text=$(block "file $1")
  [ -n "$text" ] || fail "docs/team.md has no block <!-- walk: file $1 -->"
  walked+=("file $1")
  say "block file $1"
  printf '%s\n' "$text" >"$1"
}

# Starts the one-command block ID in the background (stdout NAME.out, stderr NAME.log),
# with `extra` arguments appended; its pid is the command's own.
background_block() {
  local name=$1 extra=$2 text
  text=$(block "$name" | sed -e 's/ *#.*$//' -e '/^$/d')
  [ "$(printf '%s\n' "$text" | wc -l)" = 1 ] || fail "block $name: one command expected"
  walked+=("$name")
  say "block $name (in the background)"
  ( eval "exec $text $extra" ) >"$walk/$name.out" 2>"$walk/$name.log" </dev/null &
  pids+=($!)
}

# Waits (up to 60 s) until FILE contains TEXT.
wait_for_text() {
  for _ in $(seq 1 300); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "$1 never said: $2"
}

# The whitespace-normalised page, and a check that the page states FRAGMENT.
flat_page=$(tr -s ' \n' '  ' <"$page")
documented() {
  case "$flat_page" in
    *"$1"*) ;;
    *) fail "docs/team.md does not state: $1" ;;
  esac
}

# SQL as the cluster's superuser over the socket (apt's peer authentication).
sql() { runuser -u postgres -- "$bin/psql" -h "$walk/run" -p "$port" -d "${2:-postgres}" -XtAqc "$1"; }

# One HTTP request to serve: prints the status, then the body.
http() {
  python3 - "$@" <<'PY'
import json, sys, urllib.request, urllib.error
port, method, path, token, body = sys.argv[1:6]
request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
    data=body.encode() if body else None,
    headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
try:
    with opener.open(request, timeout=30) as response:
        print(response.status); print(response.read().decode())
except urllib.error.HTTPError as error:
    print(error.code); print(error.read().decode())
PY
}

# A JSON field of the body http printed (python's json: FIELD is a python expression on j).
field() { python3 -c "import json,sys; j=json.loads(sys.stdin.read().split('\n',1)[1]); print($1)"; }

# --- The stand-in for apt's cluster ----------------------------------------------------

say "cluster on 127.0.0.1:$port (peer on the socket, scram-sha-256 over TCP, TLS off)"
runuser -u postgres -- "$bin/initdb" -D "$data" -U postgres --auth-local=peer \
  --auth-host=scram-sha-256 --no-sync --encoding=UTF8 --locale=C.UTF-8 >"$walk/initdb.log"
runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$walk/run/postgres.log" -w -t 60 start \
  -o "-p $port -k $walk/run -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null

export PATH="$root/target/debug:$PATH"
export POCKETPILOT_HOME=$walk/machine-a XDG_CONFIG_HOME=$walk/xdg OPENAI_API_KEY=walk-no-model-is-called
unset POCKETPILOT_CONFIG POCKETPILOT_TOKEN
export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt   # the system's roots
cd "$walk"
cat >"$walk/script.json" <<'JSON'
[{"tool_calls": [{"name": "write_file", "arguments": {"path": "walk.txt", "content": "walked\n"}}]},
 {"content": "done"}]
JSON

# --- Set-up ----------------------------------------------------------------------------

printf 'SECRET\nSECRET\n' >"$walk/typed"
run_block setup "$walk/typed"
[ "$(sql "SELECT rolcanlogin AND rolpassword LIKE 'SCRAM-SHA-256%' FROM pg_authid WHERE rolname = 'pocketpilot'")" = t ] \
  || fail "setup: no login role pocketpilot with a password"
[ "$(sql "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'pocketpilot'")" = pocketpilot ] \
  || fail "setup: no database pocketpilot owned by pocketpilot"

run_block team-key
[ "$(stat -c %a "$walk/etc/pocketpilot/team.key")" = 600 ] || fail "team.key is not mode 0600"
grep -qxE '[0-9a-f]{64}' "$walk/etc/pocketpilot/team.key" || fail "team.key is not 64 hex characters"

file_block team.toml

# --- TLS modes: the documented errors, and nothing lands in SQLite ---------------------

first=$(block owner | grep -m1 'users add')   # the first owner, as the page adds it
tls_error() {
  local output
  if output=$(eval "$1" 2>&1); then fail "expected a TLS error from: $1"; fi
  printf '%s' "$output" | tr -s ' \n' '  '
}
expect_error() {
  case "$1" in *"$2"*) documented "$2" ;; *) fail "expected \"$2\" in: $1" ;; esac
}
fragment="error performing TLS handshake: server does not support TLS (the URL says sslmode=require, but this server does not offer TLS: turn on \`ssl\` in its postgresql.conf, or use sslmode=prefer or sslmode=disable on a private network or a Unix socket;"
expect_error "$(tls_error "$first")" "$fragment"

say "TLS on (a certificate for 127.0.0.1 from a CA made here)"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=walk CA" \
  -keyout "$walk/tls/ca.key" -out "$walk/tls/ca.pem" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$walk/tls/server.key" \
  -out "$walk/tls/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$walk/tls/ext"
openssl x509 -req -in "$walk/tls/server.csr" -CA "$walk/tls/ca.pem" -CAkey "$walk/tls/ca.key" \
  -CAcreateserial -days 2 -extfile "$walk/tls/ext" -out "$walk/tls/server.pem" 2>/dev/null
cp "$walk/tls/server.pem" "$walk/tls/server.key" "$data/"
chown postgres: "$data/server.pem" "$data/server.key"
chmod 600 "$data/server.key"
# TLS only over TCP, as the page's pg_hba.conf line (hostssl) has it.
sed -i 's/^host /hostssl /' "$data/pg_hba.conf"
printf "ssl = on\nssl_cert_file = 'server.pem'\nssl_key_file = 'server.key'\n" >>"$data/postgresql.conf"
sql "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 50); do [ "$(sql "SHOW ssl")" = on ] && break; sleep 0.1; done
[ "$(sql "SHOW ssl")" = on ] || fail "the cluster did not turn TLS on"

# A certificate the machine does not trust (the system's roots only).
fragment="the TLS handshake failed: the server's certificate must be trusted by the system's roots or the file SSL_CERT_FILE names, and be issued for the host name in the URL"
expect_error "$(tls_error "$first")" "$fragment"
export SSL_CERT_FILE=$walk/tls/ca.pem
# A server that accepts only TLS, and a URL without sslmode=require.
sed 's/sslmode=require/sslmode=prefer/' team.toml >plain.toml
fragment="no encryption (this server accepts only TLS connections: add sslmode=require to the URL;"
expect_error "$(tls_error "${first/team.toml/plain.toml}")" "$fragment"
rm plain.toml
# Without the config file the first owner's command lands nowhere.
mkdir "$walk/elsewhere"
if (cd "$walk/elsewhere" && eval "$first") >"$walk/elsewhere.log" 2>&1; then
  fail "the first owner's command ran without team.toml"
fi
grep -q "does not exist" "$walk/elsewhere.log" || fail "no config: $(cat "$walk/elsewhere.log")"
[ ! -e "$POCKETPILOT_HOME/pocketpilot.db" ] || fail "a failed step created the SQLite file $POCKETPILOT_HOME/pocketpilot.db"

# --- The first owner, the grant, serve and worker --------------------------------------

run_block owner >"$walk/owner.out" 2>"$walk/owner.log"
cat "$walk/owner.out" "$walk/owner.log"
[ "$(grep -c '^store: PostgreSQL pocketpilot@127.0.0.1:'"$port"'/pocketpilot$' "$walk/owner.log")" = 3 ] \
  || fail "owner: each users command should say it works on the PostgreSQL store"
alice=$(sed -n '1,/the token is shown only now: give it to alice/s/^token: //p' "$walk/owner.out" | head -n 1)
bob=$(sed -n '/(approver) added/,$s/^token: //p' "$walk/owner.out" | head -n 1)
[ -n "$alice" ] && [ -n "$bob" ] || fail "owner: no tokens printed"
[ "$(sql "SELECT string_agg(name || ':' || role, ',' ORDER BY name) FROM users" pocketpilot)" = alice:owner,bob:approver ] \
  || fail "owner: the users are not in PostgreSQL"
[ "$(sql "SELECT string_agg(user_name || ':' || workspace, ',') FROM user_grants" pocketpilot)" = bob:finance ] \
  || fail "owner: bob's grant is not in PostgreSQL"
[ ! -e "$POCKETPILOT_HOME/pocketpilot.db" ] || fail "owner: a SQLite file was created in the data directory"
[ "$(stat -c %a team.toml)" = 600 ] || fail "team.toml is not mode 0600"

background_block serve "--port 0 --script $walk/script.json"
wait_for_text "$walk/serve.out" "PocketPilot team console: http://127.0.0.1:"
serve_port=$(sed -n 's#^PocketPilot team console: http://127.0.0.1:\([0-9]*\).*#\1#p' "$walk/serve.out" | head -n 1)
grep -q "store: PostgreSQL" "$walk/serve.log" || fail "serve does not say it uses PostgreSQL"
! grep -q SECRET "$walk/serve.log" "$walk/serve.out" || fail "serve printed the password"
[ "$(http "$serve_port" GET /api/health '' '' | sed -n 1p)" = 200 ] || fail "/api/health"
me=$(http "$serve_port" GET /api/me "$alice" '')
[ "$(printf '%s' "$me" | field 'j["user"], j["role"]')" = "alice owner" ] || fail "/api/me as alice: $me"
me=$(http "$serve_port" GET /api/me "$bob" '')
[ "$(printf '%s' "$me" | field 'j["workspaces"]')" = "['finance']" ] || fail "/api/me as bob: $me"

# Machine B: its own data directory, the same team.toml.
export POCKETPILOT_HOME=$walk/machine-b
background_block worker ""
export POCKETPILOT_HOME=$walk/machine-a
wait_for_text "$walk/worker.log" "worker: "
grep -qF "model: configured in $walk/team.toml" "$walk/worker.log" || fail "the worker does not use the page's [model]"
grep -q "finance" "$walk/worker.log" && grep -q "team mode" "$walk/worker.log" \
  || fail "the worker is not a team worker of finance"

# A task of alice's, its write approved by bob (an approver granted finance), runs once.
created=$(http "$serve_port" POST /api/tasks "$alice" '{"prompt": "write walk.txt", "workspace": "finance"}')
case "$(printf '%s' "$created" | sed -n 1p)" in 201|202) ;; *) fail "creating a task: $created" ;; esac
task=$(printf '%s' "$created" | field 'j["id"]')
approval=
for _ in $(seq 1 300); do
  approval=$(http "$serve_port" GET "/api/approvals?state=pending" "$bob" '' \
    | field '",".join(a["id"] for a in j["approvals"] if a["task_id"] == "'"$task"'")' 2>/dev/null || true)
  [ -n "$approval" ] && break
  sleep 0.2
done
[ -n "$approval" ] || fail "task $task never asked for its write"
resolved=$(http "$serve_port" POST "/api/approvals/$approval/resolve" "$bob" '{"decision": "approve"}')
case "$(printf '%s' "$resolved" | sed -n 1p)" in 200|202) ;; *) fail "bob's approval: $resolved" ;; esac
for _ in $(seq 1 300); do
  state=$(http "$serve_port" GET "/api/tasks/$task" "$alice" '' | field 'j["state"]')
  [ "$state" = completed ] && break
  sleep 0.2
done
[ "$state" = completed ] || fail "task $task ended $state"
[ "$(cat "$walk/srv/finance/walk.txt")" = walked ] || fail "the approved write did not happen"
[ "$(sql "SELECT resolved_by_user FROM approvals WHERE id = '$approval'" pocketpilot)" = bob ] \
  || fail "the approval does not name bob"

# --- A schema per team -----------------------------------------------------------------

run_block schema
file_block team-a.toml
run_block schema-owner
[ "$(sql "SELECT string_agg(name, ',') FROM team_a.users" pocketpilot)" = carol ] \
  || fail "schema-owner: carol is not in team_a"
[ "$(sql "SELECT count(*) FROM users WHERE name = 'carol'" pocketpilot)" = 0 ] \
  || fail "schema-owner: carol landed in the first team"

# --- Backups ---------------------------------------------------------------------------

for pid in "${pids[@]}"; do kill -TERM "$pid"; done
for pid in "${pids[@]}"; do wait "$pid" || true; done
pids=()
run_block backup
dump=pocketpilot-$(date +%F).dump
[ "$(stat -c %a "$dump")" = 600 ] || fail "the dump is mode $(stat -c %a "$dump"), not 0600"
sql "DELETE FROM user_grants; DELETE FROM users WHERE name = 'bob'" pocketpilot >/dev/null
run_block restore
[ "$(sql "SELECT string_agg(name || ':' || role, ',' ORDER BY name) FROM users" pocketpilot)" = alice:owner,bob:approver ] \
  || fail "restore: the users are not back"
[ "$(sql "SELECT string_agg(name, ',') FROM team_a.users" pocketpilot)" = carol ] \
  || fail "restore: team_a is not back"

# Every marked block of the page was walked, in the page's order.
[ "$(markers | paste -sd' ')" = "${walked[*]}" ] \
  || fail "the page's blocks ($(markers | paste -sd' ')) are not the walked ones (${walked[*]})"
say "ok: ${#walked[@]} blocks walked in $(( $(date +%s) - started )) s"
