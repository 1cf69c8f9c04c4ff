package server

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
)

// fakePresence records the server's calls.
type fakePresence struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakePresence) log(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakePresence) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakePresence) Join(dest, principal, info string) (func(), bool) {
	if !strings.HasPrefix(dest, "/topic/room.") {
		return nil, false
	}
	f.log("join " + dest + " " + info)
	return func() { f.log("leave " + dest) }, true
}

func (f *fakePresence) Watch(dest string, send func([]byte) bool) (func(), error) {
	if !strings.HasPrefix(dest, "/topic/room.") {
		return nil, ErrPresenceNotEnabled
	}
	f.log("watch " + dest)
	send([]byte(`{"type":"snapshot"}`))
	return func() { f.log("unwatch " + dest) }, nil
}

// TestPresenceHooks: a room SUBSCRIBE joins with its presence-info, its
// UNSUBSCRIBE leaves; a /presence SUBSCRIBE watches and gets its first
// frame as a MESSAGE of its subscription; the session's end leaves and
// unwatches what is left; a destination without presence joins nothing.
func TestPresenceHooks(t *testing.T) {
	fp := &fakePresence{}
	srv := startServer(t, Config{Presence: PresenceConfig{Presence: fp}})
	c := dialRaw(t, srv.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:a\ndestination:/topic/room.1\npresence-info:Ann\n\n\x00" +
		"SUBSCRIBE\nid:b\ndestination:/topic/chat\n\n\x00" +
		"SUBSCRIBE\nid:w\ndestination:/presence/topic/room.1\n\n\x00")
	m := c.Expect("MESSAGE")
	if m.Get("subscription") != "w" || m.Get("destination") != "/presence/topic/room.1" ||
		m.Get("content-type") != "application/json" || string(m.Body) != `{"type":"snapshot"}` {
		t.Errorf("presence MESSAGE %+v %q", m.Headers, m.Body)
	}
	c.Send("UNSUBSCRIBE\nid:a\n\n\x00SUBSCRIBE\nid:c\ndestination:/topic/room.2\n\n\x00DISCONNECT\nreceipt:bye\n\n\x00")
	c.Expect("RECEIPT")
	_ = c.WS.CloseNow() // the session ends without waiting for the close handshake
	want := []string{"join /topic/room.1 Ann", "watch /topic/room.1", "leave /topic/room.1", "join /topic/room.2 ", "leave /topic/room.2", "unwatch /topic/room.1"}
	poll.Until(t, 10*time.Second, func() error {
		if got := fp.got(); !slices.Equal(got, want) {
			return errors.New("calls " + strings.Join(got, ", "))
		}
		return nil
	})
}

// TestPresenceRefused: a watch of a destination without presence, one
// over MaxWatches, a duplicate id and info over MaxInfoBytes are each
// answered with ERROR.
func TestPresenceRefused(t *testing.T) {
	fp := &fakePresence{}
	var mu sync.Mutex
	refused := map[string]int{}
	srv := startServer(t, Config{Presence: PresenceConfig{Presence: fp, MaxWatches: 1, MaxInfoBytes: 4,
		Refused: func(r string) { mu.Lock(); refused[r]++; mu.Unlock() }}})
	for _, tt := range []struct{ name, frames, want string }{
		{"not enabled", "SUBSCRIBE\nid:1\ndestination:/presence/topic/chat\n\n\x00", "presence not enabled"},
		{"no room", "SUBSCRIBE\nid:1\ndestination:/presence/\n\n\x00", "presence not enabled"},
		{"watch limit", "SUBSCRIBE\nid:1\ndestination:/presence/topic/room.1\n\n\x00SUBSCRIBE\nid:2\ndestination:/presence/topic/room.2\n\n\x00", "too many presence subscriptions"},
		{"duplicate id", "SUBSCRIBE\nid:1\ndestination:/topic/room.1\n\n\x00SUBSCRIBE\nid:1\ndestination:/presence/topic/room.1\n\n\x00", "duplicate subscription"},
		{"info too long", "SUBSCRIBE\nid:1\ndestination:/topic/room.1\npresence-info:12345\n\n\x00", "invalid presence info"},
		{"info not UTF-8", "SUBSCRIBE\nid:1\ndestination:/topic/room.1\npresence-info:\xff\n\n\x00", "invalid UTF-8"}, // refused before it reaches presence
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.url)
			c.Connect()
			c.Send(tt.frames)
			f := c.Read()
			for f.Command == "MESSAGE" {
				f = c.Read()
			}
			if f.Command != "ERROR" || f.Get("message") != tt.want {
				t.Errorf("got %s %q, want ERROR %q", f.Command, f.Get("message"), tt.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if refused["not_enabled"] != 2 || refused["watch_limit"] != 1 || refused["info_invalid"] < 1 {
		t.Errorf("refusals counted %v", refused)
	}
}
