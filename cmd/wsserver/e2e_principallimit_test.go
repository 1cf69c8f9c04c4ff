package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// TestPrincipalSendLimitAcrossInstances: one principal with five sessions
// on two instances sharing Redis is held to -principal-send-limit in
// total: a subscriber receives between the limit and the limit plus the
// documented overshoot (two instances times -principal-send-optimistic),
// the rest is dropped silently under principal_limit on both instances,
// and every frame is accounted for. Another principal publishing at the
// same time is not affected.
func TestPrincipalSendLimitAcrossInstances(t *testing.T) {
	const (
		secret     = "e2e secret for the principal limit, 32+ bytes"
		limit      = 30
		optimistic = 3
		perSession = 40 // under -send-limit, so only the principal limit drops
		dest       = "/topic/plimit"
	)
	rs := testredis.Start(t)
	c := startInstances(t, 2, rs.URL(), "-jwt-secret", secret, "-trusted-proxies", "127.0.0.1/32",
		"-send-limit", "1000",
		"-principal-send-limit", fmt.Sprint(limit), "-principal-send-optimistic", fmt.Sprint(optimistic),
		// A window of a day: the test's frames all fall in one window
		// unless it runs across midnight UTC.
		"-principal-send-window", "24h",
		// Under -race on a loaded machine a Redis call can take longer
		// than the 50 ms default, and the limit would then count per
		// instance for the rest of the window.
		"-redis-timeout", "2s")
	connect := func(base, ip, token string) *frameClient {
		t.Helper()
		fc := dialFrom(t, base, ip)
		fc.Send(connectFrame(token))
		if f := fc.Read(); f.Command != "CONNECTED" {
			t.Fatalf("CONNECT from %s: got %s %v, want CONNECTED", ip, f.Command, f.Headers)
		}
		return fc
	}
	sub := connect(c.bases[0], "10.3.0.1", "")
	sub.Send("SUBSCRIBE\nid:0\ndestination:" + dest + "\nreceipt:sub\n\n\x00")
	if f := sub.Read(); f.Command != "RECEIPT" {
		t.Fatalf("SUBSCRIBE: got %s, want RECEIPT", f.Command)
	}
	c.waitRelaySubscribed(t, c.apps[0].redis, dest, false)

	alice, bob := signToken(t, secret, "alice"), signToken(t, secret, "bob")
	var sessions []*frameClient
	for i := range 5 {
		sessions = append(sessions, connect(c.bases[i%2], fmt.Sprintf("10.3.1.%d", i+1), alice))
	}
	bobs := connect(c.bases[1], "10.3.2.1", bob)
	for n := range perSession {
		for i, s := range sessions {
			s.Send(fmt.Sprintf("SEND\ndestination:%s\n\nalice %d.%d\x00", dest, i, n))
		}
		if n < 10 {
			bobs.Send(fmt.Sprintf("SEND\ndestination:%s\n\nbob %d\x00", dest, n))
		}
	}
	// A receipt for a DISCONNECT comes after every frame before it went
	// through the chain.
	for _, s := range append(sessions, bobs) {
		s.Send("DISCONNECT\nreceipt:bye\n\n\x00")
		if f := s.Read(); f.Command != "RECEIPT" {
			t.Fatalf("DISCONNECT: got %s %v, want RECEIPT", f.Command, f.Headers)
		}
	}

	sent := 5*perSession + 10
	var passed, dropped float64
	waitFor(t, clientTimeout, func() error {
		passed, dropped = 0, 0
		var received float64
		for _, b := range c.bases {
			m := scrape(t, b)
			received += m.sum("stompgate_frames_received_total", `command="SEND"`)
			passed += m.sum("stompgate_frames_passed_total", `command="SEND"`)
			dropped += m.sum("stompgate_frames_dropped_total", `command="SEND"`, `reason="principal_limit"`)
		}
		if received != float64(sent) || passed+dropped != received {
			return fmt.Errorf("SENDs received %v, passed %v, dropped %v on both instances; want %d received = passed + dropped", received, passed, dropped, sent)
		}
		return nil
	})
	alicePassed := int(passed) - 10
	if alicePassed < limit || alicePassed > limit+2*optimistic {
		t.Errorf("alice's SENDs passed on both instances: %d of %d, want between %d and %d", alicePassed, 5*perSession, limit, limit+2*optimistic)
	}

	got := map[string]int{}
	for range int(passed) {
		f := sub.Read()
		if f.Command != "MESSAGE" {
			t.Fatalf("subscriber: got %s %v, want MESSAGE", f.Command, f.Headers)
		}
		who, _, _ := strings.Cut(string(f.Body), " ")
		got[who]++
	}
	if got["alice"] != alicePassed || got["bob"] != 10 {
		t.Errorf("subscriber received %v, want alice %d (what passed) and all 10 of bob's", got, alicePassed)
	}
	if f, err := sub.Next(200 * time.Millisecond); err == nil {
		t.Errorf("subscriber: a frame beyond what passed: %s %q", f.Command, f.Body)
	}
	// The pre-check decided alice's excess in memory: each instance asked
	// Redis once to learn she was over, and dropped the rest locally.
	var local, redisDrops float64
	for _, b := range c.bases {
		m := scrape(t, b)
		local += m[`stompgate_principal_limit_decisions_total{result="dropped",source="local"}`]
		redisDrops += m[`stompgate_principal_limit_decisions_total{result="dropped",source="redis"}`]
	}
	t.Logf("alice: %d of %d passed; drops decided locally %v, by Redis %v", alicePassed, 5*perSession, local, redisDrops)
	if local+redisDrops != dropped || redisDrops > 2 {
		t.Errorf("drops by source: local %v, redis %v; want %v in all, at most one from Redis per instance", local, redisDrops, dropped)
	}
}

// TestPrincipalLimitSettingErrors: each bad value stops start-up with an
// error naming the flag.
func TestPrincipalLimitSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-principal-send-limit", "-1"}, nil, "-principal-send-limit (WSSERVER_PRINCIPAL_SEND_LIMIT) -1: must not be negative"},
		{"", []string{"-principal-send-window", "0s"}, nil, "-principal-send-window (WSSERVER_PRINCIPAL_SEND_WINDOW) 0s: must be positive"},
		{"", []string{"-principal-send-window", "10us"}, nil, "-principal-send-window (WSSERVER_PRINCIPAL_SEND_WINDOW) 10µs: must be at least 1ms"},
		{"", []string{"-principal-send-optimistic", "-1"}, nil, "-principal-send-optimistic (WSSERVER_PRINCIPAL_SEND_OPTIMISTIC) -1: must not be negative"},
		{"", []string{"-principal-limit-entries", "0"}, nil, "-principal-limit-entries (WSSERVER_PRINCIPAL_LIMIT_ENTRIES) 0: must be positive"},
		{"", nil, map[string]string{"WSSERVER_PRINCIPAL_SEND_LIMIT": "lots"}, "WSSERVER_PRINCIPAL_SEND_LIMIT"},
	})
}

// TestPrincipalLimitPerRule: a destination rule's own principal limit
// holds one principal's SENDs to its destinations in total, apart from
// the global limit, which still governs every other destination; the
// rule's window and count are its own.
func TestPrincipalLimitPerRule(t *testing.T) {
	const (
		secret     = "e2e secret for the per-rule principal limit, 32+"
		ruleLimit  = 5
		perSession = 20
	)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	rules := testPolicy + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    principal: {limit: 5, window: 1h}
`
	if err := os.WriteFile(policyFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startApp(t, "-policy", policyFile, "-jwt-secret", secret, "-trusted-proxies", "127.0.0.1/32",
		"-send-limit", "1000", "-principal-send-limit", "60", "-principal-send-window", "1h")
	connect := func(ip, token string) *frameClient {
		t.Helper()
		fc := dialFrom(t, base, ip)
		fc.Send(connectFrame(token))
		if f := fc.Read(); f.Command != "CONNECTED" {
			t.Fatalf("CONNECT from %s: got %s %v, want CONNECTED", ip, f.Command, f.Headers)
		}
		return fc
	}
	sub := connect("10.4.0.1", "")
	for i, d := range []string{"/topic/chat.lobby", "/topic/news"} {
		sub.Send(fmt.Sprintf("SUBSCRIBE\nid:%d\ndestination:%s\nreceipt:s%d\n\n\x00", i, d, i))
		if f := sub.Read(); f.Command != "RECEIPT" {
			t.Fatalf("SUBSCRIBE %s: got %s, want RECEIPT", d, f.Command)
		}
	}
	alice := signToken(t, secret, "alice")
	sessions := []*frameClient{connect("10.4.1.1", alice), connect("10.4.1.2", alice)}
	for n := range perSession {
		for i, s := range sessions {
			s.Send(fmt.Sprintf("SEND\ndestination:/topic/chat.lobby\n\nchat %d.%d\x00", i, n))
			s.Send(fmt.Sprintf("SEND\ndestination:/topic/news\n\nnews %d.%d\x00", i, n))
		}
	}
	for _, s := range sessions {
		s.Send("DISCONNECT\nreceipt:bye\n\n\x00")
		if f := s.Read(); f.Command != "RECEIPT" {
			t.Fatalf("DISCONNECT: got %s %v, want RECEIPT", f.Command, f.Headers)
		}
	}
	got := map[string]int{}
	for {
		f, err := sub.Next(500 * time.Millisecond)
		if err != nil {
			break
		}
		kind, _, _ := strings.Cut(string(f.Body), " ")
		got[kind]++
	}
	// Without Redis the instance counts exactly: the rule's 5, and all 40
	// of the news under the global 60 (both windows are an hour: the
	// test's frames fall in one unless it runs across the hour).
	if got["chat"] != ruleLimit || got["news"] != 2*perSession {
		t.Errorf("subscriber received %v, want chat %d (the rule's principal limit) and news %d (under the global limit)", got, ruleLimit, 2*perSession)
	}
	m := scrape(t, base)
	if d := m.sum("stompgate_frames_dropped_total", `command="SEND"`, `reason="principal_limit"`); d != float64(2*perSession-ruleLimit) {
		t.Errorf("SENDs dropped under principal_limit: %v, want %d", d, 2*perSession-ruleLimit)
	}
}
