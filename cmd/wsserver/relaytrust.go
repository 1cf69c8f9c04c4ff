package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/stompgate/stompgate/relay"
)

// relayTrustSettings bound and authenticate what instances send each other
// through Redis: relayed topic messages and disconnect requests.
type relayTrustSettings struct {
	relayKey        string
	relayMaxAge     time.Duration
	relayMaxPayload int
}

// relayFlags registers the relay trust settings.
func (s *settings) relayFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.relayKey, "relay-key", "", fmt.Sprintf("shared key, at least %d bytes, that signs every message between instances (relayed topic messages, disconnect requests; HMAC-SHA256 with a timestamp); instances drop unsigned, foreign and replayed ones. Every instance needs the same key. Empty: unsigned, and anything that can PUBLISH to -redis-url can send a message to every subscriber or disconnect any session", relay.MinKeyLen))
	fs.DurationVar(&s.relayMaxAge, "relay-max-age", relay.DefaultMaxAge, "with -relay-key: how far a message's timestamp may be from this instance's clock before it is dropped as a replay (covers clock skew and a Redis backlog)")
	fs.IntVar(&s.relayMaxPayload, "relay-max-payload", 0, fmt.Sprintf("largest message in bytes an instance publishes to or accepts from Redis (relay and disconnect channels); larger ones are dropped unread and counted (0: -max-frame-size or -api-max-body, whichever is larger, plus %d)", relay.PayloadOverhead))
}

// validateRelayTrust checks the settings relayFlags registers.
func (s *settings) validateRelayTrust() error {
	if s.relayKey != "" && len(s.relayKey) < relay.MinKeyLen {
		// The key itself never reaches a message or a log.
		return badSetting("relay-key", fmt.Sprintf("of %d bytes", len(s.relayKey)), fmt.Sprintf("must be at least %d bytes (for example: openssl rand -hex 32)", relay.MinKeyLen))
	}
	if s.relayMaxAge <= 0 {
		return badSetting("relay-max-age", s.relayMaxAge, "must be positive")
	}
	if s.relayMaxPayload < 0 {
		return badSetting("relay-max-payload", s.relayMaxPayload, "must not be negative (0: derived from -max-frame-size)")
	}
	return nil
}

// relayPayloadLimit is -relay-max-payload in force: when unset, the
// largest frame a client or the server API may publish, plus the room
// the relay's envelope and length prefixes take.
func (s *settings) relayPayloadLimit() int {
	if s.relayMaxPayload > 0 {
		return s.relayMaxPayload
	}
	return max(s.maxFrameSize, s.apiMaxBody) + relay.PayloadOverhead
}
