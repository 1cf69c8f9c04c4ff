package appstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/server"
)

// DefaultStream is the stream app messages are appended to.
const DefaultStream = "stompgate:app"

// DefaultMaxLen bounds the stream's length (approximately, MAXLEN ~):
// app messages of a few hundred bytes make 100,000 entries some tens of
// MB in Redis, and at 1,000 app SENDs per second they are 100 s of
// backlog, enough for a backend to restart without losing any. The
// bound is in entries, not bytes: clients sending frames of the largest
// size (64 KiB by default) could make an unread stream hold MaxLen times
// that, about 6.5 GB, so size Redis' maxmemory or MaxLen for it.
const DefaultMaxLen = 100_000

// Config configures a Handler. Only Client is required.
type Config struct {
	// Client is the Redis the stream lives in (standalone, Sentinel or
	// cluster; the stream is one key).
	Client redis.UniversalClient
	// Stream is the stream's key. Default DefaultStream.
	Stream string
	// MaxLen is the approximate length the stream is trimmed to on each
	// append. Default DefaultMaxLen; negative is an error.
	MaxLen int64
	// Instance names this server in every entry (the instance field),
	// so a backend can tell where a message came in. Default empty.
	Instance string
}

// Handler appends app messages to a Redis Stream. It is safe for
// concurrent use.
type Handler struct {
	cfg Config
}

var _ server.AppHandler = (*Handler)(nil)

// New validates cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Client == nil {
		return nil, errors.New("appstream: Client is nil")
	}
	if cfg.MaxLen < 0 {
		return nil, fmt.Errorf("appstream: MaxLen %d is negative", cfg.MaxLen)
	}
	if cfg.MaxLen == 0 {
		cfg.MaxLen = DefaultMaxLen
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	return &Handler{cfg: cfg}, nil
}

// HandleApp appends m to the stream; it returns once Redis acknowledged
// the XADD, or with its error (ctx bounds the wait).
func (h *Handler) HandleApp(ctx context.Context, m server.AppMessage) error {
	return h.cfg.Client.XAdd(ctx, h.args(m)).Err()
}

func (h *Handler) args(m server.AppMessage) *redis.XAddArgs {
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
	return &redis.XAddArgs{
		Stream: h.cfg.Stream,
		MaxLen: h.cfg.MaxLen,
		Approx: true,
		ID:     "*",
		Values: []any{
			"destination", m.Destination,
			"principal", m.Principal,
			"session", m.Session,
			"instance", h.cfg.Instance,
			"id", m.ID,
			"headers", headers,
			"body", m.Body,
		},
	}
}
