#!/usr/bin/env bash
# A throwaway Centrifugo node for comparisons: v6.9.1 (installed with
# `go install` when missing), listening on 127.0.0.1 only, its config in
# DIR. The config has one namespace, "room", in which anonymous clients
# may subscribe and publish, with history and presence off, so that it
# does the job stompgate does in the rooms scenario and nothing more.
#
#   scripts/centrifugo.sh start DIR   prints the pid of the node
#   scripts/centrifugo.sh stop DIR
#
# Clients connect to ws://127.0.0.1:${CFG_PORT:-18000}/connection/websocket
# and use channels room:<name> (loadtest rooms -protocol centrifugo does).
set -euo pipefail

version=v6.9.1
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
port=${CFG_PORT:-18000}
bin="$(go env GOPATH)/bin/centrifugo"

case $cmd in
start)
  # `go install` leaves the binary's own version at v0.0.0: read the
  # module's from the build information instead.
  if [ ! -x "$bin" ] || ! go version -m "$bin" 2>/dev/null | grep -Eq "^\s+mod\s+github.com/centrifugal/centrifugo/v6\s+$version\s"; then
    echo "installing: centrifugo $version" >&2
    go install "github.com/centrifugal/centrifugo/v6@$version"
  fi
  cat >"$dir/config.json" <<JSON
{
  "http_server": {"address": "127.0.0.1", "port": $port},
  "log": {"level": "error"},
  "health": {"enabled": true},
  "client": {
    "allow_anonymous_connect_without_token": true,
    "allowed_origins": ["*"]
  },
  "channel": {
    "namespaces": [{
      "name": "room",
      "allow_subscribe_for_client": true,
      "allow_subscribe_for_anonymous": true,
      "allow_publish_for_client": true,
      "allow_publish_for_anonymous": true,
      "presence": false,
      "join_leave": false,
      "history_size": 0,
      "history_ttl": "0s"
    }]
  }
}
JSON
  # One descriptor per WebSocket, plus the node's own.
  ulimit -n "$(ulimit -Hn)"
  nohup "$bin" --config "$dir/config.json" >"$dir/server.out" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/centrifugo.pid"
  for _ in $(seq 100); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      echo "$pid"
      exit 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  echo "centrifugo did not start:" >&2
  cat "$dir/server.out" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
  ;;
stop)
  if [ -f "$dir/centrifugo.pid" ]; then
    pid=$(cat "$dir/centrifugo.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    rm -f "$dir/centrifugo.pid"
  fi
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
