package server

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// loginStage names sessions after the login header, so that tests
// have several sessions of one principal without tokens. A "send"
// header on CONNECT, when present, is the principal's comma-separated
// send patterns (none: any destination).
type loginStage struct{}

func (loginStage) Handle(s *interceptor.Session, f *stompframe.Frame, _ time.Time) interceptor.Result {
	if f.Command == stompframe.CommandConnect {
		if l := f.Get("login"); l != "" {
			s.Principal = &interceptor.Principal{Name: l}
			if send, ok := f.Lookup("send"); ok {
				s.Principal.Send = strings.Split(send, ",")
			}
		}
	}
	return interceptor.Continue()
}

func loginChain() *interceptor.Chain { return interceptor.NewChain(nil, loginStage{}) }

// connectAs sends CONNECT with login, which loginStage makes the
// principal, and returns CONNECTED.
func connectAs(c *rawClient, login string) *stompframe.Frame {
	c.Send("CONNECT\naccept-version:1.2\nhost:test\nlogin:" + login + "\nheart-beat:0,0\n\n\x00")
	return c.Expect("CONNECTED")
}

func TestPublishReachesSubscribers(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:1\ndestination:/topic/a\nreceipt:r\n\n\x00")
	c.Expect("RECEIPT")
	id, n := ts.Publish("/topic/a", []stompframe.Header{{Name: "kind", Value: "state"}, {Name: "content-length", Value: "999"}}, []byte("hello"))
	if id == "" || n != 1 {
		t.Fatalf("Publish = %q, %d; want an id and 1", id, n)
	}
	m := c.Expect("MESSAGE")
	if m.Get("message-id") != id || m.Get("kind") != "state" || string(m.Body) != "hello" || m.Get("content-length") != "5" {
		t.Fatalf("MESSAGE %v %q", m.Headers, m.Body)
	}
	if id, n := ts.Publish("", nil, nil); id != "" || n != 0 {
		t.Fatalf("Publish to empty destination = %q, %d", id, n)
	}
}

func TestUserDestinations(t *testing.T) {
	ts := startServer(t, Config{Chain: loginChain()})
	alice1, alice2, bob := dialRaw(t, ts.url), dialRaw(t, ts.url), dialRaw(t, ts.url)
	for _, c := range []struct {
		c     *rawClient
		login string
	}{{alice1, "alice"}, {alice2, "alice"}, {bob, "bob"}} {
		connectAs(c.c, c.login)
		c.c.Send("SUBSCRIBE\nid:q\ndestination:/user/queue/moves\nreceipt:r\n\n\x00")
		c.c.Expect("RECEIPT")
	}
	if _, n := ts.Publish(UserDestination("alice", "moves"), nil, []byte("yours")); n != 2 {
		t.Fatalf("delivered to %d sessions, want alice's 2", n)
	}
	for _, c := range []*rawClient{alice1, alice2} {
		m := c.Expect("MESSAGE")
		if m.Get("destination") != "/user/queue/moves" || string(m.Body) != "yours" {
			t.Fatalf("MESSAGE %v %q", m.Headers, m.Body)
		}
	}
	// The backend's MESSAGE carries no sender.
	if _, n := ts.Publish(UserDestination("alice", "moves"), nil, []byte("again")); n != 2 {
		t.Fatalf("delivered to %d sessions, want alice's 2", n)
	}
	for _, c := range []*rawClient{alice1, alice2} {
		if m := c.Expect("MESSAGE"); m.Get(SenderHeader) != "" {
			t.Fatalf("backend MESSAGE has %s %q, want none", SenderHeader, m.Get(SenderHeader))
		}
	}
}

// TestClientSendToUserDestination: a principal whose send patterns
// name a user destination explicitly writes to another principal, and
// the MESSAGE names the sender whatever sender header the client wrote.
func TestClientSendToUserDestination(t *testing.T) {
	ts := startServer(t, Config{Chain: loginChain()})
	alice, bob := dialRaw(t, ts.url), dialRaw(t, ts.url)
	connectAs(alice, "alice")
	alice.Send("SUBSCRIBE\nid:q\ndestination:/user/queue/moves\nreceipt:r\n\n\x00")
	alice.Expect("RECEIPT")
	bob.Send("CONNECT\naccept-version:1.2\nhost:test\nlogin:bob\nsend:/topic/**,/user/*/queue/moves\nheart-beat:0,0\n\n\x00")
	bob.Expect("CONNECTED")
	bob.Send("SEND\ndestination:/user/alice/queue/moves\nsender:backend\nsender:alice\nkind:move\n\nfrom bob\x00")
	m := alice.Expect("MESSAGE")
	if string(m.Body) != "from bob" || m.Get("kind") != "move" || m.Get("destination") != "/user/queue/moves" {
		t.Fatalf("MESSAGE %v %q", m.Headers, m.Body)
	}
	var senders []string
	for _, h := range m.Headers {
		if h.Name == SenderHeader {
			senders = append(senders, h.Value)
		}
	}
	if len(senders) != 1 || senders[0] != "bob" {
		t.Fatalf("%s headers %q, want only [bob]", SenderHeader, senders)
	}
	// Bob gets nothing: his next frame is the receipt of a later frame.
	bob.Send("SEND\ndestination:/topic/none\nreceipt:x\n\n\x00")
	if r := bob.Expect("RECEIPT"); r.Get("receipt-id") != "x" {
		t.Fatalf("receipt %v", r.Headers)
	}
	// A pattern for one queue does not open the others.
	bob.Send("SEND\ndestination:/user/alice/queue/other\nreceipt:y\n\nx\x00")
	if e := bob.Expect("ERROR"); e.Get("message") != "permission denied" {
		t.Fatalf("ERROR %v", e.Headers)
	}
}

// TestClientSendToUserDestinationRefused: without a send pattern that
// names "/user/" literally, a client's SEND to a user destination is
// refused with ERROR and a close, and the principal it names receives
// nothing: the next MESSAGE it gets is the backend's.
func TestClientSendToUserDestinationRefused(t *testing.T) {
	for _, tc := range []struct {
		name, connect string
	}{
		{"anonymous", "CONNECT\naccept-version:1.2\nhost:test\nheart-beat:0,0\n\n\x00"},
		{"no send list", "CONNECT\naccept-version:1.2\nhost:test\nlogin:mallory\nheart-beat:0,0\n\n\x00"},
		{"every destination", "CONNECT\naccept-version:1.2\nhost:test\nlogin:mallory\nsend:**\nheart-beat:0,0\n\n\x00"},
		{"every slash destination", "CONNECT\naccept-version:1.2\nhost:test\nlogin:mallory\nsend:/**\nheart-beat:0,0\n\n\x00"},
		{"wildcard before user", "CONNECT\naccept-version:1.2\nhost:test\nlogin:mallory\nsend:/*/alice/queue/moves\nheart-beat:0,0\n\n\x00"},
	} {
		for _, tx := range []bool{false, true} {
			name := tc.name
			if tx {
				name += " in a transaction"
			}
			t.Run(name, func(t *testing.T) {
				ts := startServer(t, Config{Chain: loginChain()})
				alice, mallory := dialRaw(t, ts.url), dialRaw(t, ts.url)
				connectAs(alice, "alice")
				alice.Send("SUBSCRIBE\nid:q\ndestination:/user/queue/moves\nreceipt:r\n\n\x00")
				alice.Expect("RECEIPT")
				mallory.Send(tc.connect)
				mallory.Expect("CONNECTED")
				send := "SEND\ndestination:/user/alice/queue/moves\nreceipt:s\n\n{\"from\":\"backend\",\"type\":\"you-won\"}\x00"
				if tx {
					mallory.Send("BEGIN\ntransaction:t\n\n\x00")
					send = strings.Replace(send, "receipt:s", "transaction:t\nreceipt:s", 1)
				}
				mallory.Send(send)
				e := mallory.Expect("ERROR")
				if e.Get("message") != "permission denied" || e.Get("receipt-id") != "s" {
					t.Fatalf("ERROR %v", e.Headers)
				}
				mallory.ExpectClosed()
				if _, n := ts.Publish(UserDestination("alice", "moves"), nil, []byte("backend")); n != 1 {
					t.Fatalf("delivered to %d sessions, want 1", n)
				}
				if m := alice.Expect("MESSAGE"); string(m.Body) != "backend" {
					t.Fatalf("alice got %q first, want the backend's message", m.Body)
				}
			})
		}
	}
}

func TestUserDestinationsRefuseOthers(t *testing.T) {
	for _, dest := range []string{"/user/alice/queue/moves", "/user/queue/", "/user/topic/x"} {
		t.Run(dest, func(t *testing.T) {
			ts := startServer(t, Config{Chain: loginChain()})
			c := dialRaw(t, ts.url)
			connectAs(c, "mallory")
			c.Send("SUBSCRIBE\nid:q\ndestination:" + dest + "\n\n\x00")
			if e := c.Expect("ERROR"); e.Get("message") != "permission denied" {
				t.Fatalf("ERROR %v", e.Headers)
			}
			c.ExpectClosed()
		})
	}
}

func TestAnonymousUserDestination(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	sid := c.Connect().Get("session")
	c.Send("SUBSCRIBE\nid:q\ndestination:/user/queue/x\nreceipt:r\n\n\x00")
	c.Expect("RECEIPT")
	if _, n := ts.Publish(UserDestination("anonymous-"+sid, "x"), nil, []byte("hi")); n != 1 {
		t.Fatalf("delivered %d, want 1", n)
	}
	c.Expect("MESSAGE")
}

// recordingHandler keeps the app messages it took, and fails while err
// is set.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []AppMessage
	err  error
}

func (h *recordingHandler) HandleApp(_ context.Context, m AppMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	m.Body = append([]byte(nil), m.Body...)
	h.msgs = append(h.msgs, m)
	return nil
}

func (h *recordingHandler) taken() []AppMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]AppMessage(nil), h.msgs...)
}

func TestAppDestinations(t *testing.T) {
	h := &recordingHandler{}
	ts := startServer(t, Config{Chain: loginChain(), AppHandler: h})
	c := dialRaw(t, ts.url)
	sid := connectAs(c, "alice").Get("session")
	c.Send("SUBSCRIBE\nid:1\ndestination:/app/move\nreceipt:r\n\n\x00")
	c.Expect("RECEIPT")
	c.Send("SEND\ndestination:/app/move\nx-room:7\nreceipt:s\n\nb2\x00")
	if r := c.Expect("RECEIPT"); r.Get("receipt-id") != "s" {
		t.Fatalf("receipt %v", r.Headers)
	}
	got := h.taken()
	if len(got) != 1 {
		t.Fatalf("handler took %d messages, want 1 before the RECEIPT", len(got))
	}
	m := got[0]
	if m.Destination != "/app/move" || m.Principal != "alice" || m.Session != sid || string(m.Body) != "b2" || m.ID == "" {
		t.Fatalf("AppMessage %+v", m)
	}
	if len(m.Headers) != 1 || m.Headers[0] != (stompframe.Header{Name: "x-room", Value: "7"}) {
		t.Fatalf("headers %v", m.Headers)
	}
	// Not broadcast: the subscriber on the app destination got nothing,
	// so its next frame is the receipt of a transaction's COMMIT, whose
	// app SEND reaches the handler at COMMIT.
	c.Send("BEGIN\ntransaction:t\n\n\x00")
	c.Send("SEND\ndestination:/app/move\ntransaction:t\n\nc3\x00")
	if n := len(h.taken()); n != 1 {
		t.Fatalf("a SEND in an open transaction reached the handler")
	}
	c.Send("COMMIT\ntransaction:t\nreceipt:c\n\n\x00")
	if r := c.Expect("RECEIPT"); r.Get("receipt-id") != "c" {
		t.Fatalf("receipt %v", r.Headers)
	}
	if got := h.taken(); len(got) != 2 || string(got[1].Body) != "c3" {
		t.Fatalf("after COMMIT the handler has %+v", got)
	}
}

func TestAppHandlerErrorEndsSession(t *testing.T) {
	h := &recordingHandler{err: errors.New("redis down")}
	ts := startServer(t, Config{AppHandler: h})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SEND\ndestination:/app/move\nreceipt:s\n\nb2\x00")
	e := c.Expect("ERROR")
	if e.Get("message") != "backend unavailable" || e.Get("receipt-id") != "s" {
		t.Fatalf("ERROR %v", e.Headers)
	}
	c.ExpectClosed()
	waitFor(t, func() bool { return ts.obs.closedCount(outcome.CloseBackendError) == 1 })
}

// A handler that refuses for its backlog ends the session with ERROR
// "backend busy" naming the bound, closes it with 1013, and the refusal
// is counted by bound; the handler saw the sender's address.
func TestAppBacklogRefusalEndsSession(t *testing.T) {
	var from atomic.Value
	h := AppHandlerFunc(func(_ context.Context, m AppMessage) error {
		from.Store(m.RemoteIP)
		return fmt.Errorf("appending: %w", &AppBacklogError{Bound: outcome.AppBoundAddress})
	})
	obs := &backendObserver{countingObserver: &countingObserver{closed: map[string]int{}, protocol: map[string]int{}}, app: map[string]int{}}
	ts := startServer(t, Config{AppHandler: h, Observer: obs})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SEND\ndestination:/app/move\nreceipt:s\n\nb2\x00")
	e := c.Expect("ERROR")
	if e.Get("message") != "backend busy" || e.Get("receipt-id") != "s" || e.Get("bound") != outcome.AppBoundAddress {
		t.Fatalf("ERROR %v", e.Headers)
	}
	if code := c.ExpectClosed(); code != websocket.StatusTryAgainLater {
		t.Fatalf("close %d, want 1013", code)
	}
	waitFor(t, func() bool { return obs.closedCount(outcome.CloseAppBacklog) == 1 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.app[outcome.AppRefused] != 1 || obs.refused[outcome.AppBoundAddress] != 1 {
		t.Fatalf("app results %v, refusals %v; want one refused by address", obs.app, obs.refused)
	}
	if ip, _ := from.Load().(netip.Addr); !ip.IsLoopback() {
		t.Fatalf("AppMessage.RemoteIP = %v, want the loopback client", ip)
	}
}

func TestAppWithoutHandler(t *testing.T) {
	ts := startServer(t, Config{AppPrefix: "/backend/"})
	c := dialRaw(t, ts.url)
	c.Connect()
	// Outside the prefix: an ordinary SEND.
	c.Send("SEND\ndestination:/app/move\nreceipt:a\n\n\x00")
	c.Expect("RECEIPT")
	c.Send("SEND\ndestination:/backend/move\n\nb2\x00")
	if e := c.Expect("ERROR"); e.Get("message") != "no backend configured" {
		t.Fatalf("ERROR %v", e.Headers)
	}
	c.ExpectClosed()
}

func TestSessionsOfAndDisconnect(t *testing.T) {
	ts := startServer(t, Config{Chain: loginChain()})
	a1, a2, b := dialRaw(t, ts.url), dialRaw(t, ts.url), dialRaw(t, ts.url)
	id1 := connectAs(a1, "alice").Get("session")
	id2 := connectAs(a2, "alice").Get("session")
	idb := connectAs(b, "bob").Get("session")
	got := ts.SessionsOf("alice")
	if len(got) != 2 {
		t.Fatalf("SessionsOf(alice) = %+v", got)
	}
	for _, s := range got {
		if (s.ID != id1 && s.ID != id2) || s.Principal != "alice" || s.RemoteIP != "127.0.0.1" || s.Since.IsZero() || s.Counts.Received != 1 {
			t.Fatalf("session %+v", s)
		}
	}
	if n := ts.Disconnect("alice", idb, "game over"); n != 3 {
		t.Fatalf("Disconnect ended %d sessions, want 3", n)
	}
	for _, c := range []*rawClient{a1, a2, b} {
		e := c.Expect("ERROR")
		if e.Get("message") != "disconnected by the server" || string(e.Body) != "game over" {
			t.Fatalf("ERROR %v %q", e.Headers, e.Body)
		}
		c.ExpectClosed()
	}
	waitFor(t, func() bool { return len(ts.SessionsOf("alice")) == 0 && ts.Sessions() == 0 })
	if n := ts.Disconnect("nobody", "", ""); n != 0 {
		t.Fatalf("Disconnect(nobody) = %d", n)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() error {
		if !cond() {
			return errors.New("condition not met")
		}
		return nil
	})
}

// backendObserver is a countingObserver that also counts the backend
// events.
type backendObserver struct {
	*countingObserver
	mu      sync.Mutex
	user    int
	app     map[string]int
	refused map[string]int
}

func (o *backendObserver) UserDelivered() { o.mu.Lock(); o.user++; o.mu.Unlock() }
func (o *backendObserver) AppRefused(bound string) {
	o.mu.Lock()
	if o.refused == nil {
		o.refused = map[string]int{}
	}
	o.refused[bound]++
	o.mu.Unlock()
}
func (o *backendObserver) AppHandled(r string) {
	o.mu.Lock()
	o.app[r]++
	o.mu.Unlock()
}

// A STOMP 1.1 session gets user-destination messages encoded for 1.1, and
// the observer counts them and the app messages.
func TestUserDestinationOtherVersionAndObserver(t *testing.T) {
	obs := &backendObserver{countingObserver: &countingObserver{closed: map[string]int{}, protocol: map[string]int{}}, app: map[string]int{}}
	ts := startServer(t, Config{Chain: loginChain(), Observer: obs, AppHandler: &recordingHandler{}})
	c := dialRaw(t, ts.url, "v11.stomp")
	c.Send("CONNECT\naccept-version:1.1\nhost:test\nlogin:carol\nheart-beat:0,0\n\n\x00")
	c.Expect("CONNECTED")
	c.Send("SUBSCRIBE\nid:q\ndestination:/user/queue/x\nreceipt:r\n\n\x00")
	c.Expect("RECEIPT")
	c.Send("SEND\ndestination:/app/x\nreceipt:s\n\n\x00")
	c.Expect("RECEIPT")
	ts.Publish(UserDestination("carol", "x"), []stompframe.Header{{Name: "note", Value: "a:b"}}, []byte("hi"))
	m := c.Expect("MESSAGE")
	if m.Get("destination") != "/user/queue/x" || m.Get("note") != "a:b" || string(m.Body) != "hi" {
		t.Fatalf("MESSAGE %v %q", m.Headers, m.Body)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.user != 1 || obs.app[outcome.AppOK] != 1 {
		t.Fatalf("observer: user %d, app %v", obs.user, obs.app)
	}
}
