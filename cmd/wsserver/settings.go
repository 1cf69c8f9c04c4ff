package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/internal/procs"
	"github.com/stompgate/stompgate/jwtauth"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/sessioncap"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// settings are every operator-facing setting. Each is a flag and an
// environment variable of the same name (-max-frame-size and
// WSSERVER_MAX_FRAME_SIZE); a flag on the command line wins over the
// environment. Operators script against these names: keep them stable.
type settings struct {
	addr            string
	wsPath          string
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	drainPeriod     time.Duration
	drainGrace      time.Duration
	adminAddr       string
	pprof           bool
	demo            bool
	adaptiveProcs   bool
	procsHold       time.Duration
	procsWait       time.Duration

	maxFrameSize     int
	maxHeaders       int
	maxHeaderLine    int
	maxSubscriptions int
	connectTimeout   time.Duration
	heartBeatSend    time.Duration
	heartBeatRecv    time.Duration
	heartBeatTol     time.Duration
	maxHeartBeat     time.Duration
	outboundQueue    int
	outboundBytes    int
	maxTx            int
	maxTxFrames      int
	maxTxBytes       int
	controlLimit     int
	controlWindow    time.Duration
	writeTimeout     time.Duration
	allowedOrigins   string

	compression         bool
	compressionLevel    int
	compressionMinSize  int
	compressionTakeover bool
	tlsCert             string
	tlsKey              string

	sendLimit       int
	sendWindow      time.Duration
	sendAlgorithm   string
	limitedCommands string
	abuseDrops      int
	abuseWindow     time.Duration
	abuseBan        time.Duration
	jwtSecret       string
	authRequired    bool
	jwtPublicKey    string
	jwtJWKSURL      string
	jwtJWKSRefresh  time.Duration

	redisURL       string
	relay          string
	policyFile     string
	trustedProxies string
	limiterFail    string
	ipv6Prefix     int

	maxSessionsPerPrincipal int
	sessionCapDisplace      bool
	sessionLeaseTTL         time.Duration
	redisTimeout            time.Duration
	redisCheckTimeout       time.Duration // -redis-check-timeout

	metricsPrefixes string

	// flags is the set parse read, kept for logConfig.
	flags *flag.FlagSet

	// Idle and dead peers (peers.go, server.Config.Ping*).
	httpReadHeaderTimeout time.Duration
	httpReadTimeout       time.Duration
	httpIdleTimeout       time.Duration
	httpMaxHeaderBytes    int
	pingInterval          time.Duration
	pingTimeout           time.Duration

	backendSettings // app destinations and the server API (backend.go)
	limiterSettings // the handshake limiter's queue and shedding (limiter.go)

	reconnectSettings // reconnect-loop bans (reconnect.go)

	outboundSettings // across all sessions (outbound.go)
	inboundSettings  // the per-session inbound budget (inbound.go)

	relayTrustSettings // messages between instances (relaytrust.go)
	historySettings    // destination histories and recoveries (history.go)

	principalLimitSettings // one principal's SENDs on every instance (principallimit.go)
	admissionSettings      // the instance admission (admission.go)
	acceptSettings         // the public listener's bounds (accept.go)
	presenceSettings       // room members (presence.go)
	tracingSettings        // OpenTelemetry spans (tracing.go)
}

// envName is the environment variable of a flag: WSSERVER_ and the name
// in upper case with '-' as '_'.
func envName(flagName string) string {
	return "WSSERVER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (s *settings) flagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("wsserver", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&s.addr, "addr", ":8080", "listen address")
	fs.StringVar(&s.wsPath, "ws-path", "/ws", "URL path of the STOMP WebSocket endpoint")
	fs.StringVar(&s.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&s.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&s.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful shutdown waits for sessions to flush and close")
	fs.BoolVar(&s.adaptiveProcs, "adaptive-procs", true, "run Go's scheduler on one processor while the load fits in one with room to spare, and on all (GOMAXPROCS at start) as soon as it does not, checked every 100ms; false: always on all")
	fs.DurationVar(&s.procsHold, "adaptive-procs-hold", procs.DefaultHold, "with -adaptive-procs: how long the server stays on all processors after the last moment that needed them, so that recurring bursts find them (0: no hold)")
	fs.DurationVar(&s.procsWait, "adaptive-procs-wait", procs.DefaultWait, "with -adaptive-procs: while on fewer processors, a goroutine that waited this long to run (the processors full, or the machine not running the server) brings all back at once, without waiting for the 100ms check (looked at every 5ms; 0: only the 100ms check)")

	fs.IntVar(&s.maxFrameSize, "max-frame-size", stompframe.DefaultMaxFrameSize, "largest accepted STOMP frame (and WebSocket message) in bytes")
	fs.IntVar(&s.maxHeaders, "max-headers", stompframe.DefaultMaxHeaders, "most header lines per frame")
	fs.IntVar(&s.maxHeaderLine, "max-header-line", stompframe.DefaultMaxHeaderLine, "longest header line in bytes")
	fs.IntVar(&s.maxSubscriptions, "max-subscriptions", server.DefaultMaxSubscriptions, "most subscriptions per session")
	fs.DurationVar(&s.connectTimeout, "connect-timeout", server.DefaultConnectTimeout, "deadline for CONNECT after the WebSocket upgrade")
	fs.DurationVar(&s.heartBeatSend, "heart-beat-send", server.DefaultHeartBeat, "interval at which the server can send heart-beats (0: never, as in STOMP)")
	fs.DurationVar(&s.heartBeatRecv, "heart-beat-receive", server.DefaultHeartBeat, "interval at which the server wants heart-beats (0: never, as in STOMP; such sessions get WebSocket pings)")
	fs.DurationVar(&s.heartBeatTol, "heart-beat-tolerance", server.DefaultHeartBeatTolerance, "added to the negotiated interval before a silent client is closed")
	fs.DurationVar(&s.maxHeartBeat, "max-heart-beat", server.DefaultMaxHeartBeat, "longest heart-beat interval a client may offer or ask for; a longer one counts as none (the session gets WebSocket pings)")
	fs.IntVar(&s.outboundQueue, "outbound-queue", server.DefaultOutboundQueue, "per-session outbound queue in frames; a session whose queue fills is closed as a slow consumer")
	fs.IntVar(&s.outboundBytes, "outbound-bytes", server.DefaultOutboundBytes, "per-session outbound queue in bytes; a MESSAGE that does not fit closes the session as a slow consumer, a RECEIPT makes the session stop reading until its client reads")
	fs.IntVar(&s.maxTx, "max-transactions", server.DefaultMaxTransactions, "most open transactions per session")
	fs.IntVar(&s.maxTxFrames, "max-transaction-frames", server.DefaultMaxTransactionFrames, "most SEND frames held in one transaction")
	fs.IntVar(&s.maxTxBytes, "max-transaction-bytes", server.DefaultMaxTransactionBytes, "most bytes held in all open transactions of one session")
	fs.IntVar(&s.controlLimit, "control-limit", server.DefaultControlLimit, "control frames (SUBSCRIBE, UNSUBSCRIBE, BEGIN, COMMIT, ABORT, frames with a receipt) per session per -control-window; one more closes the session")
	fs.DurationVar(&s.controlWindow, "control-window", server.DefaultControlWindow, "window of -control-limit")
	fs.DurationVar(&s.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "bound on one WebSocket write")
	fs.BoolVar(&s.compression, "compression", false, "negotiate permessage-deflate with clients that offer it (browsers do): each broadcast compressed once and shared, no compressor held by an idle session; false: no extension")
	fs.IntVar(&s.compressionLevel, "compression-level", server.DefaultCompressionLevel, "with -compression: compress/flate level, 1 (fastest) to 9 (smallest)")
	fs.IntVar(&s.compressionMinSize, "compression-min-size", server.DefaultCompressionMinSize, "with -compression: WebSocket messages shorter than this many bytes go out uncompressed (0: compress all)")
	fs.BoolVar(&s.compressionTakeover, "compression-context-takeover", false, "with -compression: keep a compressor per session across messages (3.5 times fewer bytes on 400-byte chat instead of 1.56, for a 0.8 MiB compressor held by every compressing session and a compression per delivery instead of per broadcast; level at least 2)")
	fs.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate chain: serve HTTPS and wss:// on -addr (with -tls-key), reloaded when the files change; empty: plain HTTP, e.g. behind nginx")
	fs.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of -tls-cert")
	fs.StringVar(&s.allowedOrigins, "allowed-origins", "", "comma-separated host patterns of cross-origin pages allowed to connect (e.g. \"*.example.com\"); empty: same origin only")

	fs.IntVar(&s.sendLimit, "send-limit", sessionlimit.DefaultLimit, "limited frames per session per window; excess frames are dropped silently")
	fs.DurationVar(&s.sendWindow, "send-window", sessionlimit.DefaultWindow, "session limiter window")
	fs.StringVar(&s.sendAlgorithm, "send-limit-algorithm", string(sessionlimit.Fixed), "session limiter: fixed, sliding or token")
	fs.StringVar(&s.limitedCommands, "limited-commands", "SEND", "comma-separated STOMP commands the session limiter counts")
	fs.IntVar(&s.abuseDrops, "abuse-drops", 0, "close a session after this many dropped frames within -abuse-window (0: never)")
	fs.DurationVar(&s.abuseWindow, "abuse-window", 10*time.Second, "window over which -abuse-drops are counted")
	fs.DurationVar(&s.abuseBan, "abuse-ban", 0, "ban the client IP and principal of a session closed for abuse for this long (0: no ban)")
	fs.StringVar(&s.jwtSecret, "jwt-secret", "", "HS256 secret for JWT authentication (empty: anonymous sessions)")
	fs.BoolVar(&s.authRequired, "auth-required", false, "refuse sessions without a valid JWT (needs -jwt-secret, -jwt-public-key or -jwt-jwks-url)")
	fs.StringVar(&s.jwtPublicKey, "jwt-public-key", "", "PEM file of RSA (RS256) or EC P-256 (ES256) public keys or certificates that verify JWTs")
	fs.StringVar(&s.jwtJWKSURL, "jwt-jwks-url", "", "URL of the identity provider's JWK set (jwks_uri) whose RSA and EC P-256 keys verify RS256 and ES256 JWTs")
	fs.DurationVar(&s.jwtJWKSRefresh, "jwt-jwks-refresh", jwtauth.DefaultJWKSRefresh, "how often the -jwt-jwks-url key set is fetched again (at least 10s); a token naming an unknown key also refetches it, at most every 30s")

	fs.StringVar(&s.redisURL, "redis-url", "", "Redis for the shared handshake limiter and the -relay: redis://host:port/db, redis+sentinel://..., redis+cluster://... (empty: in-process store)")
	fs.DurationVar(&s.redisTimeout, "redis-timeout", handshake.DefaultTimeout, "bound on one handshake-limit decision or session-cap call in Redis, so a slow Redis never holds a handshake; a slower answer is decided in process memory, and counts as Redis unreachable (-limiter-fail) only after -redis-timeouts-to-fail in a row and a failed confirming PING (-redis-confirm-timeout)")
	fs.StringVar(&s.relay, "relay", "", "cross-instance topic relay: \"redis\" (Pub/Sub on -redis-url; sharded Pub/Sub on a redis+cluster:// URL) or empty (single instance)")
	fs.StringVar(&s.policyFile, "policy", "", "rate-limit policy file (YAML; empty: the compiled-in defaults)")
	fs.StringVar(&s.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Real-IP / X-Forwarded-For are believed")
	fs.IntVar(&s.ipv6Prefix, "ipv6-prefix", clientip.DefaultIPv6Prefix, "prefix length (1-128) by which IPv6 clients are keyed in the handshake rate, the bans by address and the session caps: one host holds a whole /64 and may use any address in it (128: each address alone; IPv4 is always keyed by address)")
	fs.StringVar(&s.limiterFail, "limiter-fail", "open", "when Redis is unreachable: open (decide in process memory: each instance enforces the handshake rate and the session caps on its own traffic, and a ban made during the outage is known only to the instance that made it) or closed (refuse handshakes)")
	fs.IntVar(&s.maxSessionsPerPrincipal, "max-sessions-per-principal", sessioncap.DefaultMaxPerPrincipal, "most sessions one authenticated principal may hold open at once, on all instances together; more are refused at CONNECT with ERROR (0: no cap; the tabs and devices of one person)")
	fs.BoolVar(&s.sessionCapDisplace, "session-cap-displace", true, "at -max-sessions-per-principal, a principal's newest session ends its oldest instead of being refused, so whoever holds a leaked token open cannot lock its owner out (false: the newest is refused)")
	fs.DurationVar(&s.sessionLeaseTTL, "session-lease-ttl", sessioncap.DefaultLeaseTTL, "with -redis-url: how long a session's slot in a cap lives without renewal, so the longest a crashed instance's sessions keep their slots (renewed every third of it)")

	fs.StringVar(&s.metricsPrefixes, "metrics-destination-prefixes", "", "comma-separated destination prefixes that get their own label on delivery metrics")

	s.peerFlags(fs)
	s.drainFlags(fs)
	s.outboundFlags(fs)
	s.adminFlags(fs)
	s.backendFlags(fs)
	s.limiterFlags(fs)
	s.dependencyFlags(fs)
	s.reconnectFlags(fs)
	s.inboundFlags(fs)
	s.relayFlags(fs)
	s.historyFlags(fs)
	s.principalLimitFlags(fs)
	s.admissionFlags(fs)
	s.acceptFlags(fs)
	s.presenceFlags(fs)
	s.tracingFlags(fs)

	fs.Usage = func() { printUsage(out, fs) }
	return fs
}

// parse reads args, then fills every flag not given on the command line
// from its environment variable. An error names the setting.
func (s *settings) parse(args []string, getenv func(string) string, out io.Writer) error {
	s.flags = s.flagSet(out)
	s.goMemLimit = getenv("GOMEMLIMIT")
	return parseFlags(s.flags, args, getenv)
}

// parseFlags parses args into fs, then sets every flag not given on the
// command line from its environment variable (envName). A flag on the
// command line wins over the environment.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	// The flag package prints the whole usage after a bad value; a bad
	// value gets the one line the environment's would, and only -h
	// prints the usage.
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return err
	}
	if err != nil {
		return withValueHint(fs, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	err = nil
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		v := getenv(envName(f.Name))
		if v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("invalid value %q for %s: %v", v, envName(f.Name), e)
			if hint := valueHint(f); hint != "" {
				err = fmt.Errorf("%w (%s)", err, hint)
			}
		}
	})
	return err
}

// withValueHint adds to err, the flag package's error for a value it
// could not parse ("invalid value "5x" for flag -send-window: parse
// error"), what the flag's value must look like.
func withValueHint(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	_, rest, ok := strings.Cut(msg, " for flag -")
	if !ok {
		return err
	}
	name, _, _ := strings.Cut(rest, ":")
	f := fs.Lookup(name)
	if f == nil {
		return err
	}
	if hint := valueHint(f); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// splitList splits a comma-separated setting, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// serverCompression maps the compression settings to the server's: a
// -compression-min-size of 0 compresses every message, which the server
// spells as a negative MinSize (its zero means the default).
func (s *settings) serverCompression() server.Compression {
	minSize := s.compressionMinSize
	if minSize == 0 {
		minSize = -1
	}
	return server.Compression{
		Enabled:         s.compression,
		Level:           s.compressionLevel,
		MinSize:         minSize,
		ContextTakeover: s.compressionTakeover,
	}
}
