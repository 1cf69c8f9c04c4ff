package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/internal/randid"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// disconnectChannel is the Redis Pub/Sub channel on which the server API
// of one instance asks the others to end sessions. PUBLISH reaches every
// node of a Redis Cluster, so one channel serves every deployment.
const disconnectChannel = "stompgate:disconnect"

// disconnectMsg is one request on disconnectChannel.
type disconnectMsg struct {
	From      string `json:"from"` // the sending instance, which ended its own sessions already
	Principal string `json:"principal,omitempty"`
	Session   string `json:"session,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// fanout sends and hears disconnect requests, on every instance with
// -redis-url (with or without -api-key: an instance without the API still
// ends its sessions when another's API asks). Delivery is Pub/Sub's: at
// most once, to the instances subscribed at that moment; go-redis
// resubscribes after a lost connection.
//
// A request travels in the relay's envelope (relay.Signer): signed with
// -relay-key when one is set, so that only instances can end sessions;
// without a key, anything that can PUBLISH to Redis can. Requests over
// -relay-max-payload, unreadable, or refused by the Signer are ignored and
// counted in stompgate_relay_disconnect_dropped_total.
type fanout struct {
	rdb    redis.UniversalClient
	srv    *server.Server
	self   string
	trust  fanoutTrust
	ps     *redis.PubSub
	done   chan struct{}
	logger *slog.Logger
}

// fanoutTrust is how a fanout seals and checks requests.
type fanoutTrust struct {
	signer     *relay.Signer // nil without -relay-key
	maxPayload int
	metrics    *metrics.Metrics
}

var _ api.Others = (*fanout)(nil)

// startFanout subscribes to disconnectChannel and ends the sessions each
// request from another instance names.
func startFanout(rdb redis.UniversalClient, srv *server.Server, trust fanoutTrust, logger *slog.Logger) *fanout {
	f := &fanout{rdb: rdb, srv: srv, self: randid.New(10), trust: trust, done: make(chan struct{}), logger: logger}
	f.ps = rdb.Subscribe(context.Background(), disconnectChannel)
	ch := f.ps.Channel()
	go func() {
		defer close(f.done)
		for m := range ch {
			f.handle(m.Payload, time.Now())
		}
	}()
	return f
}

// handle acts on one request received at now.
func (f *fanout) handle(payload string, now time.Time) {
	if len(payload) > f.trust.maxPayload {
		f.dropped(relay.DropTooLarge)
		return
	}
	body, reason := f.trust.signer.Open(payload, now)
	if reason != "" {
		f.dropped(reason)
		return
	}
	var req disconnectMsg
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		f.dropped(relay.DropMalformed)
		return
	}
	if req.From == f.self {
		return
	}
	if n := f.srv.Disconnect(req.Principal, req.Session, req.Reason); n > 0 {
		f.logger.Info("sessions disconnected for another instance's API", "principal", req.Principal, "session", req.Session, "sessions", n)
	}
}

// dropped counts an ignored request; a log line per request would let
// whoever floods the channel flood the log too.
func (f *fanout) dropped(reason string) {
	f.trust.metrics.RelayDisconnectDropped(metrics.RelayDropReasonOf(reason), 1)
}

// Disconnect publishes the request for the other instances.
func (f *fanout) Disconnect(ctx context.Context, principal, sessionID, reason string) error {
	b, _ := json.Marshal(disconnectMsg{From: f.self, Principal: principal, Session: sessionID, Reason: reason})
	return f.rdb.Publish(ctx, disconnectChannel, f.trust.signer.Seal(nil, b, time.Now())).Err()
}

// close unsubscribes and waits for the receiving goroutine.
func (f *fanout) close() {
	if f == nil {
		return
	}
	_ = f.ps.Close()
	<-f.done
}
