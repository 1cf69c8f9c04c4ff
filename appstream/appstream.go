package appstream

import (
	"context"
	"encoding/json"
	"net/netip"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/server"
)

// DefaultStream is the stream app messages are appended to.
const DefaultStream = "stompgate:app"

// DefaultMaxLen bounds how many messages may wait for the backend
// (appended and not yet acknowledged by every consumer group), whatever
// their size: app messages of a few hundred bytes make 100,000 entries
// some tens of MB in Redis, and at 1,000 app SENDs per second they are
// 100 s of backlog, enough for a backend to restart without a sender
// being refused.
const DefaultMaxLen = 100_000

// DefaultMaxPrincipalBytes bounds the bytes one principal may have
// waiting: a real user peaks at 1.3 SENDs per second of a few hundred
// bytes, so 1 MiB is thousands of messages, minutes of a stalled
// backend; a client sending 60 KB frames at the send limit reaches it in
// under a second.
const DefaultMaxPrincipalBytes = 1 << 20

// DefaultMaxAddressBytes bounds the bytes one client address may have
// waiting: 4 principals at their bound. Anonymous sessions are each a
// principal of their own, so this is the bound that holds a script
// opening many of them; an office NAT's users rarely all have a full
// backlog at once.
const DefaultMaxAddressBytes = 4 << 20

// DefaultMaxTotalBytes bounds the bytes waiting from every sender
// together: 64 MiB leaves most of a small (256 MB) Redis to the
// limiter's, caps' and bans' keys, and at 1,000 SENDs of 500 bytes per
// second it is two minutes of backlog.
const DefaultMaxTotalBytes = 64 << 20

// Config configures a Handler. Only Client is required.
type Config struct {
	// Client is the Redis the stream lives in (standalone, Sentinel or
	// cluster; the stream and its two bookkeeping keys share one hash
	// tag). It should not evict keys (maxmemory-policy noeviction): an
	// evicted stream loses messages that were acknowledged to clients.
	Client redis.UniversalClient
	// Stream is the stream's key. Default DefaultStream.
	Stream string
	// MaxLen is the most messages that may wait for the backend; an app
	// SEND beyond it is refused (bound "entries"). Nothing is trimmed
	// unread. Default DefaultMaxLen; negative is an error.
	MaxLen int64
	// MaxPrincipalBytes is the most bytes one principal's messages may
	// hold while waiting (bound "principal"). Default
	// DefaultMaxPrincipalBytes; negative is an error.
	MaxPrincipalBytes int64
	// MaxAddressBytes is the most bytes the messages of one client
	// address may hold while waiting (bound "address"). Default
	// DefaultMaxAddressBytes; negative is an error.
	MaxAddressBytes int64
	// AddressKey turns a sender's address into the key its address bound
	// is kept under; cmd/wsserver keys IPv6 senders by prefix, as every
	// other per-address limit (clientip.Key). Nil: the address
	// itself.
	AddressKey func(netip.Addr) string
	// MaxTotalBytes is the most bytes all messages may hold while
	// waiting (bound "total"). Default DefaultMaxTotalBytes; negative is
	// an error.
	MaxTotalBytes int64
	// Instance names this server in every entry (the instance field),
	// so a backend can tell where a message came in. Default empty.
	Instance string
}

// Handler appends app messages to a Redis Stream, refusing those that
// would take the backlog past a bound (see the package doc). It is safe
// for concurrent use.
type Handler struct {
	cfg  Config
	keys [3]string // the stream, its ledger and its counters
}

var _ server.AppHandler = (*Handler)(nil)

// New validates cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Client == nil {
		return nil, configErrorf("Client is nil")
	}
	for _, b := range []struct {
		name string
		v    *int64
		def  int64
	}{
		{"MaxLen", &cfg.MaxLen, DefaultMaxLen},
		{"MaxPrincipalBytes", &cfg.MaxPrincipalBytes, DefaultMaxPrincipalBytes},
		{"MaxAddressBytes", &cfg.MaxAddressBytes, DefaultMaxAddressBytes},
		{"MaxTotalBytes", &cfg.MaxTotalBytes, DefaultMaxTotalBytes},
	} {
		if *b.v < 0 {
			return nil, configErrorf("%s %d is negative", b.name, *b.v)
		}
		if *b.v == 0 {
			*b.v = b.def
		}
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	return &Handler{cfg: cfg, keys: keys(cfg.Stream)}, nil
}

// HandleApp appends m to the stream; it returns once Redis acknowledged
// the append, with a *server.AppBacklogError when a bound refused it, or
// with Redis' error (ctx bounds the wait).
func (h *Handler) HandleApp(ctx context.Context, m server.AppMessage) error {
	return h.append(ctx, m)
}

// fields returns the entry's field/value pairs.
func (h *Handler) fields(m server.AppMessage) []any {
	hs := make(map[string]string, len(m.Headers))
	for _, x := range m.Headers {
		// A repeated header's first entry is its value (STOMP 1.2,
		// Repeated Header Entries), as everywhere else in the server.
		if _, ok := hs[x.Name]; !ok {
			hs[x.Name] = x.Value
		}
	}
	// A map of strings always encodes.
	headers, _ := json.Marshal(hs)
	f := []any{
		"destination", m.Destination,
		"principal", m.Principal,
		"session", m.Session,
		"instance", h.cfg.Instance,
		"id", m.ID,
		"headers", headers,
		"body", m.Body,
	}
	if m.Trace != "" {
		f = append(f, "traceparent", m.Trace)
	}
	return f
}
