# Sourced by scripts/startup-order.sh and scripts/rss-guard.sh: a temporary directory
# ($work, removed on exit with any background job), the loopback model
# (scripts/loopback-model.py) on a free port, a workspace ($work/ws), a config naming the
# model ($work/pp.toml) and the common flags ("${common[@]}"). free_port prints a free
# port of 127.0.0.1.
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
python3 scripts/loopback-model.py "$port" &
mkdir -p "$work/ws"
printf '[model]\nprovider = "openai"\nbase_url = "http://127.0.0.1:%s/v1"\nmodel = "loopback"\n' "$port" >"$work/pp.toml"
common=(--home "$work/home" --config "$work/pp.toml")
python3 scripts/wait-http.py "http://127.0.0.1:$port/v1/models" 30
