package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/randid"
)

// DisconnectChannel is the Redis Pub/Sub channel on which one instance
// asks the others to end sessions. PUBLISH reaches every node of a Redis
// Cluster, so one channel serves every deployment.
const DisconnectChannel = "stompgate:disconnect"

// disconnectMsg is one request on DisconnectChannel.
type disconnectMsg struct {
	From      string `json:"from"` // the sending instance, which ended its own sessions already
	Principal string `json:"principal,omitempty"`
	Session   string `json:"session,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// SessionEnder ends the local sessions a disconnect request names, as
// server.Server.Disconnect does: those of principal, or the one session
// sessionID, with reason as the ERROR frame's text. It answers how many
// it ended.
type SessionEnder interface {
	Disconnect(principal, sessionID, reason string) int
}

// DisconnectConfig configures Disconnects. Client and Sessions are
// required; every other zero field takes the default named in its
// comment.
type DisconnectConfig struct {
	// Client is the connection to Redis, as in Config; Disconnects does
	// not close it.
	Client redis.UniversalClient
	// Sessions ends the sessions another instance's request names.
	Sessions SessionEnder
	// MaxPayload is the largest request, in bytes, accepted from Redis;
	// a larger one is dropped unread (DropTooLarge). Default
	// DefaultMaxPayload; negative is an error.
	MaxPayload int
	// Key and MaxAge sign and check requests as Config.Key and
	// Config.MaxAge do messages: with a key, only instances can end
	// sessions; without one (the default), anything that can PUBLISH to
	// Redis can.
	Key    string
	MaxAge time.Duration
	// Dropped counts a request that was ignored, by reason: DropTooLarge,
	// DropMalformed, or a reason of Signer.Open. A log line per request
	// would let whoever floods the channel flood the log too. Nil: not
	// counted.
	Dropped func(reason string)
	// Logger receives a line for each request that ended sessions here.
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Disconnects sends and hears the requests to end sessions that one
// instance (its server API, or a session cap that displaced a session held
// elsewhere) makes of the others. Delivery is Pub/Sub's: at most once, to
// the instances subscribed at that moment; go-redis resubscribes after a
// lost connection. A request travels in the relay's envelope (Signer).
//
// Every method is safe for concurrent use; a nil *Disconnects is valid and
// its Close does nothing.
type Disconnects struct {
	cfg    DisconnectConfig
	signer *Signer // nil without a Key
	self   string  // this instance, so that it ignores its own requests
	ps     *redis.PubSub
	done   chan struct{} // closed when the receiving goroutine ends
}

// StartDisconnects subscribes to DisconnectChannel and ends the sessions
// each request from another instance names, until Close.
func StartDisconnects(cfg DisconnectConfig) (*Disconnects, error) {
	switch {
	case cfg.Client == nil:
		return nil, configErrorf("DisconnectConfig.Client is nil")
	case cfg.Sessions == nil:
		return nil, configErrorf("DisconnectConfig.Sessions is nil")
	case cfg.MaxPayload < 0:
		return nil, configErrorf("DisconnectConfig.MaxPayload %d is negative", cfg.MaxPayload)
	case cfg.MaxPayload == 0:
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Dropped == nil {
		cfg.Dropped = func(string) {}
	}
	signer, err := NewSigner(cfg.Key, cfg.MaxAge)
	if err != nil {
		return nil, err
	}
	d := &Disconnects{cfg: cfg, signer: signer, self: randid.New(10), done: make(chan struct{})}
	d.ps = cfg.Client.Subscribe(context.Background(), DisconnectChannel)
	ch := d.ps.Channel()
	go func() {
		defer close(d.done)
		for m := range ch {
			d.handle(m.Payload, time.Now())
		}
	}()
	return d, nil
}

// handle acts on one request received at now.
func (d *Disconnects) handle(payload string, now time.Time) {
	if len(payload) > d.cfg.MaxPayload {
		d.cfg.Dropped(DropTooLarge)
		return
	}
	body, reason := d.signer.Open(payload, now)
	if reason != "" {
		d.cfg.Dropped(reason)
		return
	}
	var req disconnectMsg
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		d.cfg.Dropped(DropMalformed)
		return
	}
	if req.From == d.self {
		return
	}
	if n := d.cfg.Sessions.Disconnect(req.Principal, req.Session, req.Reason); n > 0 {
		d.cfg.Logger.Info("sessions disconnected for another instance's API", "principal", req.Principal, "session", req.Session, "sessions", n)
	}
}

// Disconnect asks the other instances to end the sessions of principal, or
// the session sessionID, with reason; this instance's own are not touched.
func (d *Disconnects) Disconnect(ctx context.Context, principal, sessionID, reason string) error {
	b, _ := json.Marshal(disconnectMsg{From: d.self, Principal: principal, Session: sessionID, Reason: reason})
	return d.cfg.Client.Publish(ctx, DisconnectChannel, d.signer.Seal(nil, b, time.Now())).Err()
}

// Close unsubscribes and waits for the receiving goroutine. It does not
// close the Client.
func (d *Disconnects) Close() error {
	if d == nil {
		return nil
	}
	err := d.ps.Close()
	<-d.done
	return err
}
