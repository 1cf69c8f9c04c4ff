package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/internal/testredis"
)

// presenceRoom keeps presence under the test policy's rooms rule.
const presenceRoom = "/topic/room.42"

// presencePolicyFile is the test policy with a handshake zone wide enough
// for hundreds of sessions at once and a rule that keeps the presence of
// /topic/room.*.
func presencePolicyFile(t *testing.T) string {
	t.Helper()
	pol := strings.Replace(testPolicy, "rate: 30r/m\n    burst: 5", "rate: 1000r/s\n    burst: 2000", 1) + `
destinations:
  - name: rooms
    pattern: /topic/room.*
    presence: true
`
	path := filepath.Join(t.TempDir(), "presence.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// presenceArgs are the flags every presence test runs with, then extra.
func presenceArgs(t *testing.T, redisURL string, extra ...string) []string {
	return append([]string{"-policy", presencePolicyFile(t), "-redis-url", redisURL, "-redis-timeout", "2s",
		"-jwt-secret", e2eSecret, "-admit-rate", "-1", "-reconnect-limit", "0", "-limiter-shed-keys", "0", "-redis-queue-wait", "2s"}, extra...)
}

// presenceFrame is a presence MESSAGE body, snapshot or delta.
type presenceFrame struct {
	Type        string `json:"type"`
	Destination string `json:"destination"`
	Seq         uint64 `json:"seq"`
	Count       int    `json:"count"`
	Members     []struct {
		Principal string `json:"principal"`
		Sessions  int    `json:"sessions"`
		Info      string `json:"info"`
	} `json:"members"`
	Events []struct {
		Seq       uint64 `json:"seq"`
		Op        string `json:"op"`
		Principal string `json:"principal"`
		Info      string `json:"info"`
	} `json:"events"`
}

// member connects a session of principal name to base and subscribes it
// to room with info; the session ends when the test does, or earlier
// with disconnect.
func member(t *testing.T, base, name, room, info string) *stomp.Conn {
	t.Helper()
	tok := tokenFor(t, jwt.SigningMethodHS256, []byte(e2eSecret), "", name, time.Now().Add(time.Hour))
	c := dialStomp(t, wsURL(base), stomp.ConnOpt.Login("", tok))
	if _, err := c.Subscribe(room, stomp.AckAuto, stomp.SubscribeOpt.Header("presence-info", info)); err != nil {
		t.Fatalf("%s: SUBSCRIBE %s: %v", name, room, err)
	}
	return c
}

// watcher follows room's presence from a session on base and keeps what
// it is told, in order.
type watcher struct {
	t   *testing.T
	sub *stomp.Subscription
	// seq is the last seq seen; events continue it with no gap.
	seq uint64
	// members is the membership the snapshot and deltas make.
	members map[string]bool
	frames  int      // presence frames read
	events  []string // "join alice", "leave bob", in order
}

// watch subscribes a watcher to room's presence on base and reads its
// snapshot.
func watch(t *testing.T, base, room string) *watcher {
	t.Helper()
	c := dialStomp(t, wsURL(base))
	sub, err := c.Subscribe("/presence"+room, stomp.AckAuto)
	if err != nil {
		t.Fatalf("SUBSCRIBE /presence%s: %v", room, err)
	}
	w := &watcher{t: t, sub: sub, members: map[string]bool{}}
	if f := w.next(); f.Type != "snapshot" || f.Destination != room {
		t.Fatalf("first presence frame %+v, want a snapshot of %s", f, room)
	}
	return w
}

// next reads one presence frame and applies it.
func (w *watcher) next() presenceFrame {
	w.t.Helper()
	msg := nextMessage(w.t, w.sub)
	if ct := msg.Header.Get("content-type"); ct != "application/json" {
		w.t.Fatalf("presence frame content-type %q, want application/json", ct)
	}
	var f presenceFrame
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		w.t.Fatalf("presence frame %q: %v", msg.Body, err)
	}
	w.frames++
	switch f.Type {
	case "snapshot":
		w.members = map[string]bool{}
		for _, m := range f.Members {
			w.members[m.Principal] = true
		}
		if len(f.Members) != f.Count {
			w.t.Fatalf("snapshot lists %d of %d members", len(f.Members), f.Count)
		}
	case "delta":
		for _, e := range f.Events {
			if e.Seq != w.seq+1 {
				w.t.Fatalf("event %+v after seq %d: a gap or a repeat", e, w.seq)
			}
			w.seq = e.Seq
			w.members[e.Principal] = e.Op == "join"
			if e.Op == "leave" {
				delete(w.members, e.Principal)
			}
			w.events = append(w.events, e.Op+" "+e.Principal)
		}
		if f.Seq != w.seq {
			w.t.Fatalf("delta seq %d, its last event's %d", f.Seq, w.seq)
		}
		return f
	default:
		w.t.Fatalf("presence frame of type %q", f.Type)
	}
	w.seq = f.Seq
	return f
}

// until reads frames until it holds n events.
func (w *watcher) until(n int) []string {
	w.t.Helper()
	for len(w.events) < n {
		w.next()
	}
	return w.events
}

// TestPresenceAcrossInstances: a watcher on one instance sees the joins
// and leaves of members on the other, in order and with seqs that
// continue its snapshot's; a principal's second session, on either
// instance, is no join, and its first one ending no leave.
func TestPresenceAcrossInstances(t *testing.T) {
	url := testredis.Start(t).URL()
	c := startInstances(t, 2, url, presenceArgs(t, url, "-presence-grace", "0")...)
	a, b := c.bases[0], c.bases[1]
	w := watch(t, b, presenceRoom)

	alice := member(t, a, "alice", presenceRoom, "Alice")
	w.until(1)
	alice2 := member(t, b, "alice", presenceRoom, "Alice, tab 2")
	bob := member(t, a, "bob", presenceRoom, "Bob")
	w.until(2)
	disconnect(t, alice)
	disconnect(t, alice2)
	w.until(3)
	disconnect(t, bob)
	got := w.until(4)
	if want := []string{"join alice", "join bob", "leave alice", "leave bob"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if len(w.members) != 0 {
		t.Errorf("members after every leave: %v", w.members)
	}

	// A late watcher's snapshot lists the members with their sessions
	// summed over instances and the info they gave.
	carol := member(t, a, "carol", presenceRoom, "Carol")
	member(t, b, "carol", presenceRoom, "Carol again")
	_ = carol
	waitFor(t, clientTimeout, func() error {
		late := watch(t, a, presenceRoom)
		defer func() { late.sub.Unsubscribe() }()
		if len(late.members) != 1 || !late.members["carol"] {
			return fmt.Errorf("late snapshot members %v, want carol", late.members)
		}
		return nil
	})
}

// TestPresenceGraceReconnect: a member that reconnects within the grace
// period is neither a leave nor a join; the next event the watcher gets
// is another member's join.
func TestPresenceGraceReconnect(t *testing.T) {
	url := testredis.Start(t).URL()
	c := startInstances(t, 2, url, presenceArgs(t, url, "-presence-grace", "30s")...)
	w := watch(t, c.bases[1], presenceRoom)
	alice := member(t, c.bases[0], "alice", presenceRoom, "")
	w.until(1)
	disconnect(t, alice)
	member(t, c.bases[1], "alice", presenceRoom, "") // back, on the other instance
	member(t, c.bases[0], "bob", presenceRoom, "")
	if got, want := w.until(2), []string{"join alice", "join bob"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// TestPresenceKilledInstance: the members of a wsserver process killed
// with SIGKILL (no release, no renewal) leave, as a watcher on another
// instance sees, once its lease ends (-session-lease-ttl); a member also
// on the living instance stays.
func TestPresenceKilledInstance(t *testing.T) {
	url := testredis.Start(t).URL()
	const ttl = time.Second
	args := presenceArgs(t, url, "-session-lease-ttl", ttl.String(), "-presence-grace", "0")
	child, proc := startChild(t, args...)
	live, _ := startApp(t, args...)
	w := watch(t, live, presenceRoom)
	member(t, child, "ann", presenceRoom, "")
	member(t, child, "ben", presenceRoom, "")
	member(t, live, "ben", presenceRoom, "")
	w.until(2)

	proc.Kill()
	killed := time.Now()
	got := w.until(3)
	if want := []string{"join ann", "join ben", "leave ann"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	t.Logf("the killed instance's member left %v after the kill (lease TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
	if !w.members["ben"] || len(w.members) != 1 {
		t.Errorf("members = %v, want ben alone", w.members)
	}
}

// TestPresenceMassReconnect: 200 members on one instance drop and come
// back at once, with no grace period, the worst case: a watcher on the
// other instance gets their leaves and joins (those the instance has not
// written yet when they come back cancel out), in order, then a sentinel
// member's join, which the instance writes after theirs, in at most 10
// frames, and the room is whole again.
func TestPresenceMassReconnect(t *testing.T) {
	url := testredis.Start(t).URL()
	const n = 200
	c := startInstances(t, 2, url, presenceArgs(t, url, "-presence-grace", "0", "-presence-batch", "1s")...)
	w := watch(t, c.bases[1], presenceRoom)

	conns := make([]*stomp.Conn, n)
	all := func(fn func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { fn(i) })
		}
		wg.Wait()
	}
	name := func(i int) string { return fmt.Sprintf("player%03d", i) }
	all(func(i int) { conns[i] = member(t, c.bases[0], name(i), presenceRoom, "") })
	w.until(n)
	before := w.frames

	all(func(i int) { disconnect(t, conns[i]) })
	all(func(i int) { member(t, c.bases[0], name(i), presenceRoom, "") })
	member(t, c.bases[0], "sentinel", presenceRoom, "")
	for !slices.Contains(w.events, "join sentinel") {
		w.next()
	}
	frames := w.frames - before
	t.Logf("%d members dropped and came back: %d events in %d presence frames", n, len(w.events)-n, frames)
	if frames > 10 {
		t.Errorf("%d presence frames for a mass reconnect of %d, want at most 10", frames, n)
	}
	if len(w.members) != n+1 {
		t.Errorf("%d members after the reconnect, want %d", len(w.members), n+1)
	}
}

// TestPresenceRefusals: a presence SUBSCRIBE of a room no rule enables,
// one over -presence-max-watches and a presence-info over
// -presence-max-info are refused with ERROR, and counted.
func TestPresenceRefusals(t *testing.T) {
	url := testredis.Start(t).URL()
	base, _ := startApp(t, presenceArgs(t, url, "-presence-max-watches", "1", "-presence-max-info", "8")...)
	for _, tt := range []struct {
		name, frames, want, reason string
	}{
		{"not enabled", "SUBSCRIBE\nid:1\ndestination:/presence/topic/chat\n\n\x00", "presence not enabled", "not_enabled"},
		{"watch limit", "SUBSCRIBE\nid:1\ndestination:/presence/topic/room.1\n\n\x00SUBSCRIBE\nid:2\ndestination:/presence/topic/room.2\n\n\x00", "too many presence subscriptions", "watch_limit"},
		{"info too long", "SUBSCRIBE\nid:1\ndestination:/topic/room.1\npresence-info:123456789\n\n\x00", "invalid presence info", "info_invalid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fc := dialFrom(t, base, "127.0.0.1")
			fc.Connect()
			fc.Send(tt.frames)
			var f = fc.Read()
			for f.Command == "MESSAGE" {
				f = fc.Read()
			}
			if f.Command != "ERROR" || f.Get("message") != tt.want {
				t.Fatalf("got %s %q, want ERROR %q", f.Command, f.Get("message"), tt.want)
			}
			waitFor(t, clientTimeout, func() error {
				if got := scrape(t, base).sum("stompgate_presence_refused_total", "reason", tt.reason); got < 1 {
					return fmt.Errorf("refused{reason=%s} = %v", tt.reason, got)
				}
				return nil
			})
		})
	}
}

func TestPresenceSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-presence-grace", "-1s"}, nil, "-presence-grace (WSSERVER_PRESENCE_GRACE) -1s: must not be negative"},
		{"", []string{"-presence-batch", "-1ms"}, nil, "-presence-batch (WSSERVER_PRESENCE_BATCH) -1ms: must not be negative"},
		{"", []string{"-presence-max-members", "0"}, nil, "-presence-max-members (WSSERVER_PRESENCE_MAX_MEMBERS) 0: must be at least 1"},
		{"", []string{"-presence-max-watches", "0"}, nil, "-presence-max-watches (WSSERVER_PRESENCE_MAX_WATCHES) 0: must be at least 1"},
		{"", nil, map[string]string{"WSSERVER_PRESENCE_MAX_INFO": "0"}, "-presence-max-info (WSSERVER_PRESENCE_MAX_INFO) 0: must be at least 1"},
		{"", []string{"-presence-timeout", "0s"}, nil, "-presence-timeout (WSSERVER_PRESENCE_TIMEOUT) 0s: must be positive"},
	})
}

// TestPresenceWithoutRedis: one instance with no -redis-url keeps
// presence in its own memory, and the server API reads it.
func TestPresenceWithoutRedis(t *testing.T) {
	base, _ := startApp(t, "-policy", presencePolicyFile(t), "-jwt-secret", e2eSecret, "-api-key", "k3y", "-presence-grace", "0")
	w := watch(t, base, presenceRoom)
	member(t, base, "alice", presenceRoom, "Alice")
	if got := w.until(1); got[0] != "join alice" {
		t.Fatalf("events = %q, want alice's join", got)
	}
	req, err := http.NewRequest(http.MethodGet, adminBase(t, base)+"/api/v1/presence?destination="+presenceRoom, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k3y")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got presenceFrame
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || got.Count != 1 || got.Members[0].Principal != "alice" || got.Members[0].Info != "Alice" || got.Seq != 1 {
		t.Errorf("GET /api/v1/presence: %d %+v, want alice at seq 1", resp.StatusCode, got)
	}
}

// TestPresenceCluster runs two instances on a real Redis Cluster of three
// masters: rooms whose keys sit in different slots each tell a watcher on
// the other instance of their members.
func TestPresenceCluster(t *testing.T) {
	rc := testredis.StartCluster(t)
	c := startInstances(t, 2, rc.URL(), presenceArgs(t, rc.URL(), "-presence-grace", "0")...)
	for i, room := range []string{"/topic/room.a", "/topic/room.b", "/topic/room.c"} {
		w := watch(t, c.bases[1], room)
		who := fmt.Sprintf("p%d", i)
		m := member(t, c.bases[0], who, room, "")
		w.until(1)
		disconnect(t, m)
		if got, want := w.until(2), []string{"join " + who, "leave " + who}; !slices.Equal(got, want) {
			t.Errorf("%s: events = %q, want %q", room, got, want)
		}
	}
}
