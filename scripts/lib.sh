# Shared by the benchmark scripts: source it after `cd` to the repository
# root and after setting $port. It installs jq when missing, raises the
# descriptor limit (10,000 sessions need 10,000 descriptors on each side),
# makes $work (removed on exit) and builds wsserver and loadtest into it.
# A script with more to stop on exit defines cleanup() before sourcing.

if ! command -v jq >/dev/null 2>&1; then
  echo "installing: jq"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends jq >/dev/null
fi
ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
server_pid=

# stop_server: stops the wsserver start_server started, if any.
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
declare -F cleanup >/dev/null || cleanup() { stop_server; }
trap 'cleanup; rm -rf "$work"' EXIT

echo "building wsserver and loadtest"
go build -o "$work/wsserver" ./cmd/wsserver
go build -o "$work/loadtest" ./loadtest

# start_server FLAGS...: a fresh wsserver on 127.0.0.1:$port, its pid in
# $server_pid, its log in $work/server.log; exits when it does not answer
# /healthz within 10 s.
start_server() {
  stop_server
  "$work/wsserver" -addr "127.0.0.1:$port" -log-level error "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "wsserver did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
}
