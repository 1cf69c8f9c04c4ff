package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// rulesPolicy is testPolicy with destination rules: chat and game input
// with limits of their own (per hour, so that what a test sends falls in
// one window however slow the machine), a read-only announcements topic.
// chatLimit is the chat rule's limit.
func rulesPolicy(chatLimit int) string {
	return testPolicy + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    send: {limit: ` + strconv.Itoa(chatLimit) + `, window: 1h}
  - name: game_input
    pattern: /topic/game.*.input
    send: {limit: 8, window: 1h}
  - name: announcements
    pattern: /topic/announcements
    client_send: false
`
}

// rewritePolicy replaces the policy file at path with text.
func rewritePolicy(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// publish sends n SENDs to dest from pub, then one with a receipt to
// /topic/sync, which no rule matches: once its RECEIPT is back, the
// server has decided on every SEND before it (the chain runs in order on
// the session's reader), so the metrics count them all.
func publish(t *testing.T, pub *stomp.Conn, dest string, n int) {
	t.Helper()
	for i := range n {
		if err := pub.Send(dest, "text/plain", []byte(dest+" "+strconv.Itoa(i))); err != nil {
			t.Fatalf("SEND %s: %v", dest, err)
		}
	}
	if err := pub.Send("/topic/sync", "text/plain", []byte("sync"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND with a receipt: %v (the session was closed)", err)
	}
}

// expectDelivered waits until sub has had want more messages, failing the
// test as soon as it has had more. Fewer than go-stomp's 16 buffered per
// subscription are wanted, so none is held back. That no message comes
// after the last is for the metrics to show: every SEND that passed is
// delivered once to the one subscriber, and the drops are counted.
func expectDelivered(t *testing.T, sub *stomp.Subscription, want int, what string) {
	t.Helper()
	got := 0
	waitFor(t, clientTimeout, func() error {
		for {
			select {
			case m := <-sub.C:
				if m == nil || m.Err != nil {
					t.Fatalf("%s: subscription ended: %v", what, m)
				}
				got++
				if got > want {
					t.Fatalf("%s: more than %d delivered", what, want)
				}
				continue
			default:
			}
			if got < want {
				return fmt.Errorf("%s: %d of %d delivered so far", what, got, want)
			}
			return nil
		}
	})
}

// TestRulesSideBySide sends from one session to two rules with different
// limits, and to a destination no rule matches: each delivers its own
// number (chat 5, game input 8, the rest under the default 20), the drops
// are counted by rule on /metrics, and received = passed + dropped.
func TestRulesSideBySide(t *testing.T) {
	base, _ := startApp(t, "-policy", writePolicy(t, rulesPolicy(5)), "-send-limit", "20", "-send-window", "1h")
	url := wsURL(base)
	sub := dialStomp(t, url)
	chat := subscribe(t, sub, "/topic/chat.lobby")
	game := subscribe(t, sub, "/topic/game.7.input")
	other := subscribe(t, sub, "/topic/news")
	pub := dialStomp(t, url)

	publish(t, pub, "/topic/chat.lobby", 12)
	publish(t, pub, "/topic/game.7.input", 12)
	publish(t, pub, "/topic/news", 6)
	expectDelivered(t, chat, 5, "chat")
	expectDelivered(t, game, 8, "game input")
	expectDelivered(t, other, 6, "unmatched")
	// The default limit of 20 per window: 6 news and 3 sync used 9; the
	// rules' frames did not count against it.
	publish(t, pub, "/topic/news", 10)
	expectDelivered(t, other, 10, "unmatched after the rules' floods")

	s := scrape(t, base)
	for rule, want := range map[string]float64{"chat": 7, "game_input": 4, "default": 0} {
		if got := s.sum("stompgate_rule_frames_dropped_total", `rule="`+rule+`"`); got != want {
			t.Errorf("drops of rule %s = %v, want %v", rule, got, want)
		}
	}
	received := s.sum("stompgate_frames_received_total", `command="SEND"`)
	passed := s.sum("stompgate_frames_passed_total", `command="SEND"`)
	dropped := s.sum("stompgate_frames_dropped_total", `command="SEND"`)
	if received != passed+dropped || dropped != 11 {
		t.Errorf("SEND received %v, passed %v, dropped %v: want received = passed + dropped, 11 dropped", received, passed, dropped)
	}
	disconnect(t, pub)
	disconnect(t, sub)
}

// TestRulesReadOnly: a client's SEND to a read-only destination ends its
// session with ERROR "permission denied", as a SEND outside its
// permissions does, and is counted; SUBSCRIBE to it is allowed.
func TestRulesReadOnly(t *testing.T) {
	base, _ := startApp(t, "-policy", writePolicy(t, rulesPolicy(5)))
	c := stomptest.NewRaw(t, mustDial(t, base))
	c.Send("CONNECT\naccept-version:1.2\nhost:e2e\nheart-beat:0,0\n\n\x00")
	if f := c.Read(); f.Command != "CONNECTED" {
		t.Fatalf("CONNECT: got %s", f.Command)
	}
	c.Send("SUBSCRIBE\nid:1\ndestination:/topic/announcements\nreceipt:s\n\n\x00")
	if f := c.Read(); f.Command != "RECEIPT" {
		t.Fatalf("SUBSCRIBE to the read-only destination: got %s %v, want RECEIPT", f.Command, f.Headers)
	}
	c.Send("SEND\ndestination:/topic/announcements\n\nhello\x00")
	f := c.Read()
	if f.Command != "ERROR" || f.Get("message") != "permission denied" || !strings.Contains(string(f.Body), "announcements") {
		t.Fatalf("SEND to the read-only destination: got %s %v %q, want ERROR permission denied naming the rule", f.Command, f.Headers, f.Body)
	}
	expectClosed(t, c)
	s := scrape(t, base)
	if got := s.sum("stompgate_rule_frames_dropped_total", `rule="announcements"`); got != 1 {
		t.Errorf("drops of rule announcements = %v, want 1", got)
	}
	if got := s.sum("stompgate_frames_dropped_total", `command="SEND"`, `reason="rejected"`); got != 1 {
		t.Errorf("SENDs rejected = %v, want 1", got)
	}
}

// mustDial opens a WebSocket to base's STOMP endpoint.
func mustDial(t *testing.T, base string) *websocket.Conn {
	t.Helper()
	ws, resp, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, describe(resp))
	}
	return ws
}

// TestRulesReload changes the chat rule's limit in the file and reloads
// (what SIGHUP does) while a session is live: the session is not
// dropped, and its next frames meet the new limit with a fresh count. A
// file with an invalid rule is then refused and the rules in force stay.
func TestRulesReload(t *testing.T) {
	path := writePolicy(t, rulesPolicy(2))
	base, a := startApp(t, "-policy", path)
	url := wsURL(base)
	sub := dialStomp(t, url)
	chat := subscribe(t, sub, "/topic/chat.lobby")
	pub := dialStomp(t, url)

	publish(t, pub, "/topic/chat.lobby", 4)
	expectDelivered(t, chat, 2, "before the reload")
	rewritePolicy(t, path, rulesPolicy(5))
	if err := a.rules.reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	publish(t, pub, "/topic/chat.lobby", 7)
	expectDelivered(t, chat, 5, "after raising the limit to 5")

	rewritePolicy(t, path, strings.Replace(rulesPolicy(9), "window: 1h}", "window: -1s}", 1))
	err := a.rules.reload()
	if err == nil || !strings.Contains(err.Error(), `destinations[0] "chat": send.window: -1s is negative`) {
		t.Fatalf("reload of an invalid file: %v, want the error naming the rule and field", err)
	}
	// The rules of the last good file stay: chat's 5 are used up, so
	// these 3 are dropped (2 + 2 + 3 over the limits in all).
	publish(t, pub, "/topic/chat.lobby", 3)
	s := scrape(t, base)
	if got := s.sum("stompgate_rule_frames_dropped_total", `rule="chat"`); got != 7 {
		t.Errorf("drops of rule chat = %v, want 7", got)
	}
	for result, want := range map[string]float64{"applied": 1, "refused": 1} {
		if got := s.sum("stompgate_policy_reloads_total", `result="`+result+`"`); got != want {
			t.Errorf("reloads %s = %v, want %v", result, got, want)
		}
	}
	disconnect(t, pub)
	disconnect(t, sub)
}

// TestRulesInvalidAtStart: a policy whose rule is invalid stops the
// program at start with an error naming the rule and the field.
func TestRulesInvalidAtStart(t *testing.T) {
	path := writePolicy(t, strings.Replace(rulesPolicy(5), "/topic/game.*.input", "/topic/game .input", 1))
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-policy", path},
		func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `destinations[1] "game_input": pattern: "/topic/game .input" holds a space`) {
		t.Errorf("run with an invalid rule: %v, want an error naming the rule and field", err)
	}
}
