package main

import (
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// validate checks every setting before anything is built, so that a bad
// value stops start-up with a message naming the flag and its environment
// variable rather than the internal field it ends up in.
func (s *settings) validate() error {
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return fmt.Errorf("-tls-cert (%s) %q and -tls-key (%s) %q: set both or neither", envName("tls-cert"), s.tlsCert, envName("tls-key"), s.tlsKey)
	}
	for _, c := range []struct {
		name string
		v    int
		min  int
	}{
		{"max-frame-size", s.maxFrameSize, 1},
		{"max-headers", s.maxHeaders, 1},
		{"max-header-line", s.maxHeaderLine, 1},
		{"max-subscriptions", s.maxSubscriptions, 1},
		{"outbound-queue", s.outboundQueue, 1},
		{"outbound-bytes", s.outboundBytes, 1},
		{"max-transactions", s.maxTx, 1},
		{"max-transaction-frames", s.maxTxFrames, 1},
		{"max-transaction-bytes", s.maxTxBytes, 1},
		{"control-limit", s.controlLimit, 1},
		{"send-limit", s.sendLimit, 1},
		{"abuse-drops", s.abuseDrops, 0},
		{"max-sessions-per-principal", s.maxSessionsPerPrincipal, 0},
	} {
		if c.v < c.min {
			if c.min == 0 {
				return badSetting(c.name, c.v, "must not be negative")
			}
			return badSetting(c.name, c.v, "must be positive")
		}
	}
	if s.maxFrameSize > 1<<30 {
		return badSetting("max-frame-size", s.maxFrameSize, "must be at most 1 GiB")
	}
	if s.maxFrameSize < stompframe.MinFrameSize {
		return badSetting("max-frame-size", s.maxFrameSize, fmt.Sprintf("must be at least %d: a client's CONNECT must fit", stompframe.MinFrameSize))
	}
	for _, p := range splitList(s.allowedOrigins) {
		if _, err := path.Match(p, ""); err != nil {
			return badSetting("allowed-origins", strconv.Quote(p), "is not a valid host pattern (path.Match syntax: *, ?, [a-z])")
		}
	}
	for _, c := range []struct {
		name     string
		v        time.Duration
		positive bool
	}{
		{"shutdown-timeout", s.shutdownTimeout, true},
		{"connect-timeout", s.connectTimeout, true},
		{"heart-beat-tolerance", s.heartBeatTol, true},
		{"max-heart-beat", s.maxHeartBeat, true},
		{"heart-beat-send", s.heartBeatSend, false},
		{"heart-beat-receive", s.heartBeatRecv, false},
		{"write-timeout", s.writeTimeout, true},
		{"redis-timeout", s.redisTimeout, true},
		{"control-window", s.controlWindow, true},
		{"send-window", s.sendWindow, true},
		{"abuse-window", s.abuseWindow, true},
		{"abuse-ban", s.abuseBan, false},
		{"session-lease-ttl", s.sessionLeaseTTL, true},
		{"adaptive-procs-hold", s.procsHold, false},
		{"adaptive-procs-wait", s.procsWait, false},
	} {
		switch {
		case c.positive && c.v <= 0:
			return badSetting(c.name, c.v, "must be positive")
		case c.v < 0:
			return badSetting(c.name, c.v, "must not be negative")
		}
	}
	if s.compressionLevel < 1 || s.compressionLevel > 9 {
		return badSetting("compression-level", s.compressionLevel, "must be between 1 and 9")
	}
	if s.compressionMinSize < 0 {
		return badSetting("compression-min-size", s.compressionMinSize, "must not be negative")
	}
	if hb := max(s.heartBeatSend, s.heartBeatRecv); s.maxHeartBeat < hb {
		return badSetting("max-heart-beat", s.maxHeartBeat, fmt.Sprintf("is below the server's own heart-beat (%v): a client offering it would count as offering none", hb))
	}
	if err := s.validateDependencies(); err != nil {
		return err
	}
	if err := s.validateAdmin(); err != nil {
		return err
	}
	if err := s.validateBackend(); err != nil {
		return err
	}
	if err := s.validateLimiter(); err != nil {
		return err
	}
	if err := s.validateReconnect(); err != nil {
		return err
	}
	if err := s.validateOutbound(); err != nil {
		return err
	}
	if err := s.validateDrain(); err != nil {
		return err
	}
	if err := s.validatePeers(); err != nil {
		return err
	}
	if err := s.validateInbound(); err != nil {
		return err
	}
	if err := s.validateHistory(); err != nil {
		return err
	}
	if err := s.validatePresence(); err != nil {
		return err
	}
	if err := s.validateTracing(); err != nil {
		return err
	}
	if err := s.validateRelayTrust(); err != nil {
		return err
	}
	if err := s.validatePrincipalLimit(); err != nil {
		return err
	}
	if err := s.validateAdmission(); err != nil {
		return err
	}
	if err := s.validateAccept(); err != nil {
		return err
	}
	if !validPath(s.wsPath) {
		return badSetting("ws-path", s.wsPath, `must be "/" followed by letters, digits and "-._~/"`)
	}
	switch s.wsPath {
	case "/", "/healthz", "/readyz", "/metrics":
		return badSetting("ws-path", s.wsPath, "is taken by another endpoint")
	}
	// The names are sessionlimit's: a list of its own here would drift.
	if _, err := sessionlimit.ParseAlgorithm(s.sendAlgorithm); err != nil {
		return badSetting("send-limit-algorithm", s.sendAlgorithm, "want fixed, sliding or token")
	}
	switch s.limiterFail {
	case "open", "closed":
	default:
		return badSetting("limiter-fail", s.limiterFail, "want open or closed")
	}
	if s.ipv6Prefix < 1 || s.ipv6Prefix > 128 {
		return badSetting("ipv6-prefix", s.ipv6Prefix, "must be between 1 and 128")
	}
	if err := s.validateAuth(); err != nil {
		return err
	}
	if s.abuseBan > 0 && s.abuseDrops == 0 {
		return badSetting("abuse-ban", s.abuseBan, "needs -abuse-drops to be set")
	}
	return nil
}

// validPath reports whether p is a plain absolute URL path that is safe
// as a ServeMux pattern: no spaces, wildcards or escapes.
func validPath(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '/':
		default:
			return false
		}
	}
	return true
}
