#!/usr/bin/env bash
# The rooms scenario against stompgate (wsserver), Centrifugo and
# RabbitMQ Web-STOMP at the same sizes in one sitting, each server fresh
# for each run, and the comparison written into BENCHMARKS.md (between
# its rooms markers, in the hand-measured part that scripts/bench.sh
# keeps) with a chart.
#
#   ./scripts/bench-rooms.sh
#   ROOMS_SIZES="1000 5000" ROOMS_REPEAT=3 ROOMS_SERVERS="sg cf" ROOMS_KEEP=/tmp/rooms ./scripts/bench-rooms.sh
#
# Centrifugo v6.9.1 is started by scripts/centrifugo.sh (go install when
# missing); RabbitMQ is Debian's rabbitmq-server with the web_stomp
# plugin, started by scripts/rabbitmq.sh (apt-get when missing) with its
# open-file limit raised; all on 127.0.0.1 only. The shape is the game's
# with heart-beats off (Centrifugo pings on its own schedule), ROOMS_WARMUP
# of warm-up left out of the latencies. Each run reports every latency's
# server part (to the kernel's arrival at the socket, SO_TIMESTAMPNS) and
# the tool's. About a minute per run.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${BENCH_PORT:-18090}
out=${BENCH_OUT:-BENCHMARKS.md}
chart=${ROOMS_CHART:-benchmarks/rooms.svg}
sizes=${ROOMS_SIZES:-1000 5000 10000}
duration=${ROOMS_DURATION:-18s}
warmup=${ROOMS_WARMUP:-3s}
heart_beat=${ROOMS_HEARTBEAT:-0}
repeat=${ROOMS_REPEAT:-1}
servers=${ROOMS_SERVERS:-sg cf rmq}
# ROOMS_KEEP: a directory that receives every run's JSON report.
keep=${ROOMS_KEEP:-}
sg_url="ws://127.0.0.1:$port/ws"
admin_port=$((port + 2))
cf_url="ws://127.0.0.1:${CFG_PORT:-18000}/connection/websocket"
rmq_url="ws://127.0.0.1:${RMQ_WS_PORT:-15674}/ws"

rmq_dir=
cf_dir=
# cleanup: lib.sh's exit trap stops Centrifugo and RabbitMQ as well as
# wsserver.
cleanup() {
  stop_server
  if [ -n "$rmq_dir" ]; then
    ./scripts/rabbitmq.sh stop "$rmq_dir" || true
    rmq_dir=
  fi
  if [ -n "$cf_dir" ]; then
    ./scripts/centrifugo.sh stop "$cf_dir" || true
    cf_dir=
  fi
}
# jq, the descriptor limit, $work, the binaries, start_server/stop_server.
# shellcheck source=scripts/lib.sh
. ./scripts/lib.sh

# rooms NAME ARGS...: one rooms run, JSON into $work/NAME.json; a run
# that fails leaves its error in $work/NAME.err and the script goes on.
rooms() {
  local name=$1
  shift
  echo "loadtest rooms $* ($(uptime | sed 's/.*load average/load average/'))"
  uptime >"$work/$name.uptime"
  if ! "$work/loadtest" rooms "$@" -duration "$duration" -warmup "$warmup" -heart-beat "$heart_beat" -json >"$work/$name.json" 2>"$work/$name.err"; then
    rm -f "$work/$name.json"
    echo "  failed: $(tail -1 "$work/$name.err")"
  elif [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp "$work/$name.json" "$keep/"
  fi
}

# run_one SERVER NAME SIZE: one rooms run against a fresh SERVER.
run_one() {
  local s=$1 name=$2 n=$3 pid
  case $s in
  sg)
    # The game's load, not the admission: the default -admit-rate
    # (-max-sessions/20 a second) would refuse most of 10,000 joins at once.
    # The admin listener beside the public one, not on the default
    # 8082 that another wsserver on this machine may hold.
    start_server -admit-rate -1 -admin-addr "127.0.0.1:$admin_port"
    rooms "$name" -url "$sg_url" -metrics-url "http://127.0.0.1:$admin_port/metrics" -sessions "$n" -pid "$server_pid"
    ;;
  cf)
    cf_dir="$work/centrifugo_$name"
    if ! pid=$(./scripts/centrifugo.sh start "$cf_dir" 2>"$work/$name.err"); then
      echo "  centrifugo did not start: $(tail -1 "$work/$name.err")"
      cleanup
      return
    fi
    rooms "$name" -protocol centrifugo -url "$cf_url" -metrics-url off -sessions "$n" -pid "$pid"
    ;;
  rmq)
    rmq_dir="$work/rabbitmq_$name"
    if ! pid=$(./scripts/rabbitmq.sh start "$rmq_dir" 2>"$work/$name.err"); then
      echo "  rabbitmq did not start: $(grep -m1 -o 'dist_port_already_used\|[^ ]*rror[^\n]*' "$work/$name.err" || tail -1 "$work/$name.err")"
      cleanup
      return
    fi
    rooms "$name" -url "$rmq_url" -login guest -passcode guest -host / -metrics-url off -sessions "$n" -pid "$pid"
    ;;
  esac
  cleanup
  sleep 2
}

declare -A label=([sg]=stompgate [cf]="Centrifugo v6.9.1" [rmq]="RabbitMQ Web-STOMP")
read -r -a order <<<"$servers"
# RabbitMQ stalls above about 2,000 sessions on this machine (see the
# notes below the table): larger sizes leave it out unless
# ROOMS_RMQ_MAX says otherwise.
rmq_max=${ROOMS_RMQ_MAX:-2000}
mkdir -p "$(dirname "$chart")"
table=""
chart_arg=(-chart "$chart")
for n in $sizes; do
  at=()
  for s in "${order[@]}"; do
    if [ "$s" != rmq ] || [ "$n" -le "$rmq_max" ]; then
      at+=("$s")
    fi
  done
  names=""
  for s in "${at[@]}"; do
    names="${names:+$names,}${label[$s]}"
  done
  groups=()
  for r in $(seq "$repeat"); do
    for s in "${at[@]}"; do
      run_one "$s" "${s}_${n}_$r" "$n"
    done
    complete=1
    for s in "${at[@]}"; do
      [ -f "$work/${s}_${n}_$r.json" ] || complete=0
    done
    if [ "$complete" = 1 ]; then
      for s in "${at[@]}"; do
        groups+=("$work/${s}_${n}_$r.json")
      done
    fi
  done
  if [ ${#groups[@]} -gt 0 ] && [ ${#at[@]} -gt 1 ]; then
    # The chart shows the first size that completed.
    table="$table$("$work/loadtest" compare -names "$names" "${chart_arg[@]}" "${groups[@]}")"$'\n\n'
    chart_arg=()
  else
    table="$table(no run at $n sessions completed on every server)"$'\n\n'
  fi
done

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
rmq_version=$(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo unknown)
erl_version=$(dpkg-query -W -f '${Version}' erlang-base 2>/dev/null || echo unknown)
{
  echo "<!-- rooms: generated by scripts/bench-rooms.sh; the lines up to the end marker are replaced on each run -->"
  echo
  echo "## Rooms: stompgate against Centrifugo and RabbitMQ Web-STOMP"
  echo
  echo "Generated by \`scripts/bench-rooms.sh\` on $(date -u +%Y-%m-%d), commit $commit, on the"
  echo "machine above ($(nproc) CPUs shared by the servers, the load generator and"
  echo "other work). The game's shape: players in rooms of 9, each subscribed to"
  echo "its room's topic (channel) and sending 1.3 messages/s to it (the measured"
  echo "peak), one per WebSocket message; 100-byte bodies; heart-beats $heart_beat;"
  echo "$duration of load after all sessions joined, the first $warmup left out of"
  echo "the latencies, then up to 10 s of drain. Every message reaches the 9"
  echo "players of its room, the sender included. Each server is fresh for each"
  echo "run; $repeat run(s) per size, in the order of the table."
  echo
  echo "- stompgate: \`wsserver -addr 127.0.0.1:$port -admin-addr 127.0.0.1:$admin_port -log-level error -admit-rate -1\` (defaults otherwise; the instance admission rate off, as this measures the game, not the admission)"
  echo "- Centrifugo v6.9.1 (\`go install github.com/centrifugal/centrifugo/v6@v6.9.1\`), started by \`scripts/centrifugo.sh\`: anonymous clients subscribe and publish in the namespace \`room\`, history and presence off; driven with its JSON protocol"
  echo "- RabbitMQ $rmq_version (Erlang $erl_version), \`rabbitmq-plugins enable rabbitmq_web_stomp\`, defaults otherwise; started by \`scripts/rabbitmq.sh\` with its open-file limit raised and checked"
  echo
  echo '```'
  for n in $sizes; do
    echo "go run ./loadtest rooms -url $sg_url -metrics-url http://127.0.0.1:$admin_port/metrics -sessions $n -duration $duration -warmup $warmup -heart-beat $heart_beat -pid \$(pidof wsserver)"
    echo "go run ./loadtest rooms -protocol centrifugo -url $cf_url -metrics-url off -sessions $n -duration $duration -warmup $warmup -heart-beat $heart_beat -pid \$(cat DIR/centrifugo.pid)"
    if [ "$n" -le "$rmq_max" ]; then
      echo "go run ./loadtest rooms -url $rmq_url -login guest -passcode guest -host / -metrics-url off -sessions $n -duration $duration -warmup $warmup -heart-beat $heart_beat -pid \$(cat DIR/rabbit.pid)"
    fi
  done
  echo '```'
  echo
  echo "$table"
  echo
  for n in $sizes; do
    for r in $(seq "$repeat"); do
      for s in "${order[@]}"; do
        if [ -s "$work/${s}_${n}_$r.err" ] && [ ! -f "$work/${s}_${n}_$r.json" ]; then
          echo "- $n sessions on ${label[$s]}, run $r: the run failed: \`$(tail -1 "$work/${s}_${n}_$r.err")\`"
        fi
      done
    done
  done
  echo
  echo "Load average (\`uptime\`) when each run started:"
  echo
  for n in $sizes; do
    for r in $(seq "$repeat"); do
      for s in "${order[@]}"; do
        if [ -f "$work/${s}_${n}_$r.uptime" ]; then
          echo "- $n sessions, ${label[$s]}, run $r: $(sed 's/.*load average: //' "$work/${s}_${n}_$r.uptime")"
        fi
      done
    done
  done
  echo
  echo "Delivered msg/s counts what arrived within the load period; offered is"
  echo "players × 1.3 × 9. A server that falls behind delivers less than offered"
  echo "during the load, and its latency grows with the backlog; the delivery"
  echo "ratio counts what arrived by the end of the drain. The server part of a"
  echo "latency runs from the publisher's stamp to the kernel's arrival of the"
  echo "message at the subscriber's socket (SO_TIMESTAMPNS); the rest is the load"
  echo "generator's. Server CPU is /proc/<pid>/stat over the load and the drain,"
  echo "divided by the messages delivered; RSS per session is (RSS at the end of"
  echo "the load − RSS before the first session) / sessions. Ratios are the other"
  echo "server's figure over stompgate's."
  echo
  echo "RabbitMQ runs at sizes up to $rmq_max sessions only (\`ROOMS_RMQ_MAX\`):"
  echo "above about 2,000 it falls behind on this machine (the dated appendix)."
  echo
  echo "![rooms: the other servers ÷ stompgate]($chart)"
  echo
  echo "<!-- rooms: end -->"
} >"$work/rooms.md"

# Replace the section between the markers, or append it.
if [ -f "$out" ] && grep -q '^<!-- rooms: generated' "$out"; then
  awk -v sect="$work/rooms.md" '
    /^<!-- rooms: generated/ { while ((getline l < sect) > 0) print l; skip = 1; next }
    skip && /^<!-- rooms: end -->/ { skip = 0; next }
    !skip { print }
  ' "$out" >"$work/out.md"
  cp "$work/out.md" "$out"
else
  { echo; cat "$work/rooms.md"; } >>"$out"
fi
echo "wrote $out and $chart"
