package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/internal/randid"
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
type fanout struct {
	rdb    redis.UniversalClient
	srv    *server.Server
	self   string
	ps     *redis.PubSub
	done   chan struct{}
	logger *slog.Logger
}

var _ api.Others = (*fanout)(nil)

// startFanout subscribes to disconnectChannel and ends the sessions each
// request from another instance names.
func startFanout(rdb redis.UniversalClient, srv *server.Server, logger *slog.Logger) *fanout {
	f := &fanout{rdb: rdb, srv: srv, self: randid.New(10), done: make(chan struct{}), logger: logger}
	f.ps = rdb.Subscribe(context.Background(), disconnectChannel)
	ch := f.ps.Channel()
	go func() {
		defer close(f.done)
		for m := range ch {
			var req disconnectMsg
			if err := json.Unmarshal([]byte(m.Payload), &req); err != nil {
				f.logger.Warn("unreadable disconnect request", "channel", disconnectChannel, "err", err)
				continue
			}
			if req.From == f.self {
				continue
			}
			if n := f.srv.Disconnect(req.Principal, req.Session, req.Reason); n > 0 {
				f.logger.Info("sessions disconnected for another instance's API", "principal", req.Principal, "session", req.Session, "sessions", n)
			}
		}
	}()
	return f
}

// Disconnect publishes the request for the other instances.
func (f *fanout) Disconnect(ctx context.Context, principal, sessionID, reason string) error {
	b, _ := json.Marshal(disconnectMsg{From: f.self, Principal: principal, Session: sessionID, Reason: reason})
	return f.rdb.Publish(ctx, disconnectChannel, b).Err()
}

// close unsubscribes and waits for the receiving goroutine.
func (f *fanout) close() {
	if f == nil {
		return
	}
	_ = f.ps.Close()
	<-f.done
}
