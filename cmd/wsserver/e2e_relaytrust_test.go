package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/relay"
)

// testRelayKey is a -relay-key of the minimum length.
const testRelayKey = "0123456789abcdef0123456789abcdef"

// relayPayload is a well-formed relay payload (wire version 2) from an
// instance that does not exist, sealed by s (nil: unsigned): what anyone
// with write access to Redis can PUBLISH.
func relayPayload(t *testing.T, s *relay.Signer, dest string, body []byte) []byte {
	t.Helper()
	var p []byte
	for _, f := range []string{"injector", dest} {
		p = binary.AppendUvarint(p, uint64(len(f)))
		p = append(p, f...)
	}
	p = append(p, 1, 6) // one header: "x-from", "evil!"
	p = append(p, "x-from"...)
	p = append(p, 5)
	p = append(p, "evil!"...)
	p = append(p, body...)
	return s.Seal([]byte{2}, p, time.Now())
}

func otherSigner(t *testing.T) *relay.Signer {
	t.Helper()
	s, err := relay.NewSigner(strings.Repeat("k", relay.MinKeyLen), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Two instances with -relay-key on a real Redis, attacked through Redis
// itself: a 5 MB PUBLISH on a relay channel, forged unsigned and
// wrongly signed messages, and forged disconnect requests for a live
// session. Every one is dropped and counted by reason; the subscriber
// gets only the real message from the other instance; the session stays open until the real
// API asks, from the other instance, to end it.
func TestRelayInjection(t *testing.T) {
	rs := testredis.Start(t)
	c := startInstances(t, 2, "redis://"+rs.Addr, "-relay-key", testRelayKey, "-api-key", "k3y")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	const dest = "/topic/room.1"
	victim := dialStomp(t, wsURL(c.bases[0]))
	sub := subscribe(t, victim, dest)
	c.waitRelaySubscribed(t, rdb, dest, false)
	ch := c.apps[0].relay.Channel(dest)

	attacks := []struct {
		name    string
		channel string
		payload []byte
		metric  string
		reason  string
	}{
		{"5 MB publish", ch, relayPayload(t, nil, dest, make([]byte, 5<<20)), "stompgate_relay_dropped_total", "too_large"},
		{"unsigned message", ch, relayPayload(t, nil, dest, []byte("forged")), "stompgate_relay_dropped_total", "unsigned"},
		{"message under another key", ch, relayPayload(t, otherSigner(t), dest, []byte("forged")), "stompgate_relay_dropped_total", "bad_signature"},
		{"5 MB disconnect", relay.DisconnectChannel, make([]byte, 5<<20), "stompgate_relay_disconnect_dropped_total", "too_large"},
		{"plain JSON disconnect", relay.DisconnectChannel, []byte(fmt.Sprintf(`{"from":"x","session":%q}`, victim.Session())), "stompgate_relay_disconnect_dropped_total", "malformed"},
		{"unsigned disconnect", relay.DisconnectChannel, (*relay.Signer)(nil).Seal(nil, []byte(fmt.Sprintf(`{"from":"x","session":%q}`, victim.Session())), time.Now()), "stompgate_relay_disconnect_dropped_total", "unsigned"},
		{"disconnect under another key", relay.DisconnectChannel, otherSigner(t).Seal(nil, []byte(fmt.Sprintf(`{"from":"x","session":%q}`, victim.Session())), time.Now()), "stompgate_relay_disconnect_dropped_total", "bad_signature"},
	}
	for _, a := range attacks {
		if err := rdb.Publish(ctx, a.channel, a.payload).Err(); err != nil {
			t.Fatalf("%s: PUBLISH: %v", a.name, err)
		}
		waitFor(t, clientTimeout, func() error {
			if got := scrape(t, c.bases[0]).sum(a.metric, fmt.Sprintf("reason=%q", a.reason)); got != 1 {
				return fmt.Errorf("%s: %s{reason=%q} = %v, want 1", a.name, a.metric, a.reason, got)
			}
			return nil
		})
	}
	if n := c.apps[0].stomp.Sessions(); n != 1 {
		t.Fatalf("after forged disconnects: %d sessions on the first instance, want 1", n)
	}

	// A real message from the other instance arrives, and is the first.
	pub := dialStomp(t, wsURL(c.bases[1]))
	if err := pub.Send(dest, "text/plain", []byte("real"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	m := nextMessage(t, sub)
	if string(m.Body) != "real" || m.Header.Get("x-from") != "" {
		t.Fatalf("first message: %.40q x-from %q, want the real one", m.Body, m.Header.Get("x-from"))
	}

	// A real disconnect, through the other instance's API, still works.
	code, v := apiCall(t, c.bases[1], "k3y", "POST", "/api/v1/disconnect", fmt.Sprintf(`{"session":%q,"reason":"bye"}`, victim.Session()))
	if code != http.StatusOK {
		t.Fatalf("disconnect: %d %v", code, v)
	}
	waitFor(t, clientTimeout, func() error {
		if n := c.apps[0].stomp.Sessions(); n != 0 {
			return fmt.Errorf("%d sessions open after the API's disconnect", n)
		}
		return nil
	})
	s := scrape(t, c.bases[0])
	if got := s.sum("stompgate_relay_messages_total", `direction="in"`); got != 1 {
		t.Errorf("relay messages in = %v, want 1 (only the real one)", got)
	}
	if got := s.sum("stompgate_relay_disconnect_dropped_total"); got != 4 {
		t.Errorf("disconnect requests dropped = %v, want 4", got)
	}
}

// A short -relay-key, or a bad -relay-max-age or -relay-max-payload,
// stops start-up with a message naming the setting; the key itself is
// never in it.
func TestRelayTrustSettingErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"short key", nil, []string{"-relay-key", "hunter2"}, "-relay-key (WSSERVER_RELAY_KEY) of 7 bytes: must be at least 32 bytes"},
		{"short key from env", map[string]string{"WSSERVER_RELAY_KEY": "hunter2"}, nil, "-relay-key (WSSERVER_RELAY_KEY) of 7 bytes"},
		{"zero max age", nil, []string{"-relay-max-age", "0s"}, "-relay-max-age (WSSERVER_RELAY_MAX_AGE) 0s: must be positive"},
		{"negative max payload", nil, []string{"-relay-max-payload", "-1"}, "-relay-max-payload (WSSERVER_RELAY_MAX_PAYLOAD) -1: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st settings
			if err := st.parse(tt.args, func(k string) string { return tt.env[k] }, io.Discard); err != nil {
				t.Fatalf("parse: %v", err)
			}
			err := st.validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate: %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("validate: %v shows the key", err)
			}
		})
	}
	// Unset, the payload limit follows the largest frame or API body.
	st := settings{}
	st.maxFrameSize, st.apiMaxBody = 64<<10, 1<<20
	if got, want := st.relayPayloadLimit(), 1<<20+relay.PayloadOverhead; got != want {
		t.Errorf("relayPayloadLimit = %d, want %d", got, want)
	}
}
