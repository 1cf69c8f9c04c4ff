#!/usr/bin/env bash
# A throwaway RabbitMQ node with the Web-STOMP plugin, for comparisons:
# Debian's rabbitmq-server (installed with apt-get when missing), every
# listener on 127.0.0.1, all state in DIR.
#
#   scripts/rabbitmq.sh start DIR   prints the pid of the node (beam.smp)
#   scripts/rabbitmq.sh stop DIR
#
# Web-STOMP listens on ws://127.0.0.1:${RMQ_WS_PORT:-15674}/ws; log in
# as guest/guest, which RabbitMQ allows from loopback only, with the
# CONNECT host header "/" (the virtual host). The node name, the Erlang
# distribution, epmd, AMQP and plain STOMP use ports away from a system
# RabbitMQ's, so one can run beside this node.
#
# The node runs straight from /usr/lib/rabbitmq/bin, not through the
# package's /usr/sbin wrapper: that one starts it through `su rabbitmq`,
# which resets the open-file soft limit to 1,024 and caps the node near
# 830 WebSockets. This script raises the limit to ${RMQ_NOFILE:-the hard
# limit} before the start and checks the running node's own limit in
# /proc/<pid>/limits, failing when it is lower.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin=/usr/lib/rabbitmq/bin

export RABBITMQ_NODENAME=stompgate-bench@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=${RMQ_AMQP_PORT:-5682}
export RABBITMQ_DIST_PORT=${RMQ_DIST_PORT:-25682}
export ERL_EPMD_ADDRESS=127.0.0.1
export ERL_EPMD_PORT=${RMQ_EPMD_PORT:-4379}
export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf
export RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
export RABBITMQ_MNESIA_BASE=$dir/mnesia
export RABBITMQ_LOG_BASE=$dir/log
export RABBITMQ_PID_FILE=$dir/rabbit.pid
# A node that fails to start writes its crash dump here, not into the
# directory the script was run from.
export ERL_CRASH_DUMP=$dir/erl_crash.dump
# The Erlang cookie lives in $HOME.
export HOME=$dir
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"

case $cmd in
start)
  if [ ! -x "$bin/rabbitmq-server" ]; then
    echo "installing: rabbitmq-server" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The package's own service is not started (no init in a container)
    # and not used: this node runs from DIR.
    apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null
  fi
  cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$RABBITMQ_NODE_PORT
stomp.listeners.tcp.1 = 127.0.0.1:${RMQ_STOMP_PORT:-61623}
web_stomp.tcp.ip = 127.0.0.1
web_stomp.tcp.port = ${RMQ_WS_PORT:-15674}
log.console = false
log.file.level = warning
EOF
  "$bin/rabbitmq-plugins" enable --offline rabbitmq_web_stomp >"$dir/plugins.log" 2>&1
  # One descriptor per WebSocket, plus the node's own.
  nofile=${RMQ_NOFILE:-$(ulimit -Hn)}
  if ! ulimit -n "$nofile"; then
    echo "cannot raise the open-file limit to $nofile (hard limit $(ulimit -Hn))" >&2
    exit 1
  fi
  rm -f "$RABBITMQ_PID_FILE"
  nohup "$bin/rabbitmq-server" >"$dir/server.out" 2>&1 &
  if ! "$bin/rabbitmqctl" wait "$RABBITMQ_PID_FILE" --timeout 120 >"$dir/wait.log" 2>&1; then
    echo "rabbitmq did not start:" >&2
    cat "$dir/wait.log" "$dir/server.out" >&2
    exit 1
  fi
  pid=$(cat "$RABBITMQ_PID_FILE")
  got=$(awk '/^Max open files/ { print $4 }' "/proc/$pid/limits")
  if [ "$got" != unlimited ] && [ "$got" -lt "$nofile" ]; then
    echo "rabbitmq runs with an open-file soft limit of $got, not $nofile: it would refuse sockets near $got" >&2
    exit 1
  fi
  echo "rabbitmq: pid $pid, open-file soft limit $got" >&2
  echo "$pid"
  ;;
stop)
  if [ -f "$RABBITMQ_PID_FILE" ]; then
    pid=$(cat "$RABBITMQ_PID_FILE")
    "$bin/rabbitmqctl" stop "$RABBITMQ_PID_FILE" >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    rm -f "$RABBITMQ_PID_FILE"
  fi
  # The node started its own epmd on the port above; nothing else uses it.
  epmd -port "$ERL_EPMD_PORT" -kill >/dev/null 2>&1 || true
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
