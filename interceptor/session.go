package interceptor

import (
	"net/netip"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/sessionlimit"
)

// Session is what the stages see of one STOMP session. The server creates
// one per WebSocket connection and keeps it for the connection's life. The
// fields are written by the server before the first frame and by stages on
// the session's reader goroutine; the counters may be read from any
// goroutine.
type Session struct {
	// ID is the server-assigned session id (the CONNECTED session header).
	ID string
	// RemoteIP is the client's address as the handshake limiter saw it
	// (after trusted-proxy processing).
	RemoteIP netip.Addr
	// Query is the WebSocket handshake URL's query (for access_token).
	Query url.Values
	// Principal is set by the PrincipalStage when CONNECT is accepted;
	// nil before.
	Principal *Principal
	// Limiter is the session's message limiter, created by the LimitStage
	// on the first limited frame; nil until then, so an idle session
	// costs nothing.
	Limiter sessionlimit.Limiter

	// The LimitStage's limiters for destination rules with limits of
	// their own, made on first use, at most one per rule of ruleTable,
	// the rules they belong to.
	ruleLimiters []ruleLimiter
	ruleTable    *DestinationRules

	// abuse is the LimitStage's escalation state: drops counted in a
	// fixed window that starts at the first drop.
	abuseStart int64 // Unix nanoseconds
	abuseDrops int

	// The PrincipalStage's token checks after CONNECT (tokens.go): the
	// tokens verified recently, the next slot to replace, and the checks
	// counted in a fixed window that starts at the first.
	tokens     []rememberedToken
	tokenNext  int
	checkStart int64 // Unix nanoseconds
	checks     int

	// values is the per-session state of stages a program adds (Value,
	// SetValue): a short list, since a chain has a handful of stages.
	values []sessionValue

	received, passed, dropped, pending atomic.Uint64
}

type sessionValue struct {
	key, value any
}

// Value returns what a stage stored for this session under key with
// SetValue, or nil. A stage of a program's own keeps its per-session
// state here, keyed by an unexported type of its own (as context keys
// are), instead of in a map of its own beside the server's. Like
// everything a stage does, it is called on the session's reader
// goroutine, so it needs no lock.
func (s *Session) Value(key any) any {
	for _, v := range s.values {
		if v.key == key {
			return v.value
		}
	}
	return nil
}

// SetValue stores value for this session under key, replacing what was
// there; it goes away with the session. See Value.
func (s *Session) SetValue(key, value any) {
	for i := range s.values {
		if s.values[i].key == key {
			s.values[i].value = value
			return
		}
	}
	s.values = append(s.values, sessionValue{key, value})
}

// Counts is a snapshot of a session's frame accounting. Received equals
// Passed + Dropped + Pending once the chain has returned for every frame;
// Pending counts SENDs held in open transactions, which become passed or
// dropped when their transaction ends.
type Counts struct {
	Received, Passed, Dropped, Pending uint64
}

// Counts returns the session's frame accounting so far.
func (s *Session) Counts() Counts {
	// Read dropped and passed before received: a frame in flight is then
	// at worst counted as received and not yet as its outcome, never the
	// reverse.
	d := s.dropped.Load()
	p := s.passed.Load()
	q := s.pending.Load()
	return Counts{Received: s.received.Load(), Passed: p, Dropped: d, Pending: q}
}

// Principal is the identity a session acts as.
type Principal struct {
	// Name is the principal's name (the CONNECTED user-name header).
	Name string
	// Anonymous is true for a generated identity.
	Anonymous bool
	// Subscribe and Send are destination patterns the principal may
	// SUBSCRIBE to and SEND to (see MatchDestination); nil means any.
	Subscribe, Send []string
	// Expires is when the principal's credentials end (a JWT's exp); the
	// server ends the session then with ERROR "token expired". A stage
	// that accepts newer credentials for the same principal moves it
	// later. The zero value means never.
	Expires time.Time

	// token is a keyed hash of the token this principal was verified
	// from (zero: none), so that a frame repeating it is not verified
	// again.
	token uint64
}
