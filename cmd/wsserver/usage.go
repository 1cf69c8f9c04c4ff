package main

import (
	"flag"
	"fmt"
	"io"
)

// flagSection is one heading of -h: the settings of one subject, in the
// order an operator reads them.
type flagSection struct {
	title string
	flags []string
}

// flagSections orders -h by subject, in the order a request meets them:
// where it arrives, what bounds it, the session it becomes, the shared
// state behind it, who it is, where its messages go, and how the process
// is run. Every flag is in exactly one section (TestHelpSections).
var flagSections = []flagSection{
	{"Listeners: where the server listens and how long an HTTP peer may take", []string{
		"addr", "tls-cert", "tls-key", "ws-path", "allowed-origins", "demo", "admin-addr", "pprof",
		"http-read-header-timeout", "http-read-timeout", "http-idle-timeout", "http-max-header-bytes",
	}},
	{"Limits: handshake rate, bans, session caps, reconnect loops, per-session and per-principal rates", []string{
		"policy", "trusted-proxies", "ipv6-prefix", "limiter-fail", "limiter-shed-keys", "limiter-in-flight-per-key",
		"max-sessions-per-principal", "session-cap-displace", "session-lease-ttl",
		"send-limit", "send-window", "send-limit-algorithm", "limited-commands",
		"principal-send-limit", "principal-send-window", "principal-send-optimistic", "principal-limit-entries",
		"abuse-drops", "abuse-window", "abuse-ban",
		"reconnect-limit", "reconnect-window", "reconnect-ban",
		"control-limit", "control-window", "inbound-frames", "inbound-bytes", "inbound-window",
	}},
	{"Admission: how many sessions this instance takes, how fast, in how much memory, and the connections it accepts", []string{
		"max-sessions", "admit-rate", "admit-burst", "memory-limit", "memory-admit-threshold", "retry-after-max",
		"accept-rate", "accept-burst", "accept-rate-per-addr", "max-pending-conns", "max-pending-conns-per-addr", "pending-conn-timeout",
	}},
	{"Sessions: frames, heart-beats, queues, transactions, presence and compression", []string{
		"max-frame-size", "max-headers", "max-header-line", "max-subscriptions", "connect-timeout",
		"heart-beat-send", "heart-beat-receive", "heart-beat-tolerance", "max-heart-beat",
		"ping-interval", "ping-timeout",
		"outbound-queue", "outbound-bytes", "outbound-total-bytes", "socket-send-buffer", "write-timeout",
		"max-transactions", "max-transaction-frames", "max-transaction-bytes",
		"presence-grace", "presence-batch", "presence-max-members", "presence-max-watches", "presence-max-info", "presence-timeout",
		"compression", "compression-level", "compression-min-size", "compression-context-takeover",
	}},
	{"Redis: the state instances share and the relay between them", []string{
		"redis-url", "redis-timeout", "redis-queue-wait", "redis-timeouts-to-fail", "redis-confirm-timeout",
		"redis-check-timeout", "relay", "relay-key", "relay-max-age", "relay-max-payload",
	}},
	{"History: what destinations with history keep, and recoveries from it", historyFlagNames},
	{"Auth: JWT verification and how often a session's token is checked", []string{
		"jwt-secret", "auth-required", "jwt-public-key", "jwt-jwks-url", "jwt-jwks-refresh",
		"remembered-tokens", "token-checks", "token-check-window",
	}},
	{"Backend: app destinations and the server API", []string{
		"app-prefix", "app-timeout", "app-stream", "app-stream-maxlen",
		"app-stream-principal-bytes", "app-stream-address-bytes", "app-stream-total-bytes",
		"app-redis-url", "redis-allow-eviction", "api-key", "api-max-body", "api-max-page-size",
	}},
	{"Tracing: OpenTelemetry spans of frames and of each message across instances", []string{
		"otel-endpoint", "otel-sample-ratio", "otel-max-traces-per-second", "otel-service-name",
	}},
	{"Operations: logs, metrics, draining, shutdown and processors", []string{
		"log-level", "log-format", "metrics-destination-prefixes",
		"drain-period", "drain-grace", "shutdown-timeout",
		"adaptive-procs", "adaptive-procs-hold", "adaptive-procs-wait",
	}},
}

// usageHead starts the server's -h.
const usageHead = "Usage: wsserver [flags]\n       wsserver nginx-config [flags]\n       wsserver -version\n\nEvery flag can also be set by the environment variable shown.\n"

// printUsage writes -h: the command lines, then every flag of fs by
// section, each with its environment variable and default.
func printUsage(out io.Writer, fs *flag.FlagSet) {
	printSections(out, usageHead, flagSections, fs)
}

// printSections writes head, then every flag of fs by section, each with
// its environment variable and default.
func printSections(out io.Writer, head string, sections []flagSection, fs *flag.FlagSet) {
	fmt.Fprint(out, head)
	for _, sec := range sections {
		fmt.Fprintf(out, "\n%s\n", sec.title)
		for _, n := range sec.flags {
			if f := fs.Lookup(n); f != nil {
				fmt.Fprintf(out, "  -%s (%s)\n    \t%s (default %q)\n", f.Name, envName(f.Name), f.Usage, f.DefValue)
			}
		}
	}
}
