// Command loadtest drives load against any STOMP-over-WebSocket server
// and reports what was delivered, how fast, and what it cost.
//
//	go run ./loadtest flood           [flags]  normal users and abusers in rooms
//	go run ./loadtest throughput      [flags]  P publishers, S subscribers, one topic
//	go run ./loadtest handshake-storm [flags]  WebSocket handshakes per source IP
//	go run ./loadtest idle            [flags]  N heart-beating sessions, server RSS
//	go run ./loadtest abuse           [flags]  attacks, each beside an honest room
//	go run ./loadtest rooms           [flags]  N players in rooms of M, each sending to its room
//	go run ./loadtest compare [flags] A.json B.json ...  two servers' rooms runs side by side
//	go run ./loadtest reconnect-storm [flags]  N sessions move from a stopped instance to another
//
// Every scenario takes -url (default ws://127.0.0.1:8080/ws), -host,
// -login, -passcode, -topic-prefix, -metrics-url, -pid, -json and -chart;
// run a scenario with -h for its own flags. Progress goes to stderr once
// a second, rewritten in place on a terminal and one line per second
// anywhere else; the report goes to stdout, as a table or with -json as
// JSON. -chart writes the per-second series as SVG, on a log scale when
// they differ by an order of magnitude or more. Each run stops by itself after its
// -duration (and a bounded drain); Ctrl-C stops it early and still prints
// the report so far.
//
// # Against wsserver
//
// wsserver limits SEND to 20 per second per session by default. flood
// measures exactly that limit; throughput needs it out of the way:
//
//	wsserver -addr 127.0.0.1:8080 -send-limit 1000000
//
// The handshake limiter allows 3 handshakes per second per client IP
// with a burst of 5. handshake-storm measures it from 127.0.0.2,
// 127.0.0.3, …. The other scenarios keep out of its way: toward a
// loopback target every session leaves from its own source address
// (flood and throughput from 127.2.x.y, idle from 127.1.x.y), which the
// default policy lets through. With -spread-sources=false, or idle's
// -sessions-per-ip above 6, start the server with a -policy file whose
// ws_handshake zone is large (rate: 100000r/s, burst: 100000).
//
// abuse runs its attacks one after another, each for
// -duration-per-attack (commit-burst for -commit-after more), each beside
// a fresh honest room, and reads the server's RSS and CPU every 100 ms
// from /proc (-pid) or its metrics page. Its attackers leave from
// 127.3.x.y, one address per session, except sessions-per-ip and
// http-idle, which are one client: 127.3.255.254. A Go server keeps the
// memory an attack made it grow for a while, so judge a memory figure
// from a fresh server (-attacks tx-fill alone).
//
// reconnect-storm starts its own servers: two wsserver instances (the
// -wsserver binary, with -server-args) sharing a Redis (-redis-url, or a
// redis-server it starts). It holds -sessions on A, each from its own
// source address in 127.4.x.y, so that the default policy's per-IP
// handshake limit and session cap see one client per address as they
// would in production (no -trusted-proxies, no policy file needed); B's
// untouched sessions leave from 127.5.x.y. It then kills A (-stop kill)
// or sends it SIGTERM (-stop drain, with -drain-period in -server-args),
// and every client reconnects to B on the schedule of client.Backoff,
// the one web/static/reconnect.js follows in browsers. It stops once all
// are back or after -duration, and stops every process it started.
//
// Subscriptions are confirmed before any SEND: a SUBSCRIBE carries a
// receipt, followed in the same message by an empty transaction with a
// receipt as a fence, for servers (go-stomp's) that do not answer
// receipts on SUBSCRIBE.
//
// The tool's own cost matters: it shares the machine with the server. One
// goroutine reads each connection; publishers wake on a coarse ticker
// (10 ms to 1 s) and send every frame due in one WebSocket message; frames
// are built into reused buffers. The report gives the tool's CPU time per
// message sent or received, and the server's per delivered message when
// -pid names the server process.
//
// A latency is taken from the publisher's stamp to the moment the tool's
// reader has the message, so it includes the tool's own delays: on a
// shared machine its process waits for a processor, and the reads of a
// burst queue behind each other (each delivered message costs the tool
// a wake-up and two recvmsg calls, one of them finding nothing). rooms
// therefore splits every latency on Linux (-kernel-stamps, on by
// default): each read also returns the kernel's receive time
// (SO_TIMESTAMPNS), so the report gives the server's part (stamp to
// arrival at the socket) and the tool's (arrival to read) beside the
// whole, with the publishers' timer lateness and a p99 per second.
//
// rooms -protocol centrifugo drives a Centrifugo server with its JSON
// protocol instead of STOMP (scripts/centrifugo.sh starts one), so that
// the same shape runs against stompgate, Centrifugo and RabbitMQ
// Web-STOMP (scripts/bench-rooms.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/stompgate/stompgate/loadtest/internal/attack"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the scenario winds down and reports; a
		// second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// scenarios maps each subcommand to its entry point.
var scenarios = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"flood":           scenario.RunFlood,
	"throughput":      scenario.RunThroughput,
	"handshake-storm": scenario.RunStorm,
	"idle":            scenario.RunIdle,
	"abuse":           attack.RunAbuse,
	"rooms":           scenario.RunRooms,
	"compare":         scenario.RunCompare,
	"reconnect-storm": scenario.RunReconnectStorm,
}

// run dispatches to the scenario named by args[0].
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return errors.New("no scenario given")
		}
		return flag.ErrHelp
	}
	fn, ok := scenarios[args[0]]
	if !ok {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown scenario %q", args[0])
	}
	raiseFileLimit(stderr)
	return fn(ctx, args[1:], stdout, stderr)
}

const usage = `Usage: loadtest <scenario> [flags]

Scenarios:
  flood            normal sessions and abusive sessions publishing to rooms
  throughput       publishers and subscribers on one topic
  handshake-storm  WebSocket handshakes per source IP against the limiter
  idle             heart-beating idle sessions and the server's RSS per session
  abuse            attacks one client can make, each beside an honest room:
                   server RSS and CPU, honest delivery and p99, the attacker's fate
  rooms            players in rooms, each publishing to its room with heart-beats
                   on: delivered msg/s, latency, server CPU per message and RSS
  compare          rooms reports (-json) of two servers in pairs: a Markdown table
                   of both and their ratios, and -chart the ratios as bars
  reconnect-storm  starts two wsservers sharing a Redis, holds N sessions on A,
                   stops A and has every client reconnect to B with backoff:
                   arrivals per 100 ms, time until all are back, B's RSS,
                   refusals by reason, latency of B's own sessions

Run "loadtest <scenario> -h" for the flags of a scenario.
`
