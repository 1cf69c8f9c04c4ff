package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jsDir is the Node project of the end-to-end tests, relative to this
// package's directory (the working directory of its tests).
const jsDir = "../../e2e/js"

// jsSetupHint says how to get Node and the project's packages.
const jsSetupHint = "run the project's test command, `make test` (scripts/test.sh installs nodejs and npm when missing and runs `npm ci` in e2e/js)"

// roundtripResult is the JSON line e2e/js/roundtrip.mjs prints.
type roundtripResult struct {
	Connected   bool   `json:"connected"`
	Version     string `json:"version"`
	Receipt     string `json:"receipt"`
	Body        string `json:"body"`
	Header      string `json:"header"`
	User        string `json:"user"`
	Destination string `json:"destination"`
}

// TestStompJS runs one round trip with @stomp/stompjs, the client browser
// apps use, under Node against the wired server: CONNECT with a JWT as
// passcode, SUBSCRIBE, SEND with a custom header and a receipt, MESSAGE,
// DISCONNECT. The script's constants (receipt id, body, header) are
// repeated here.
func TestStompJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found in PATH: %v; %s", err, jsSetupHint)
	}
	for _, pkg := range []string{"@stomp/stompjs", "ws"} {
		if _, err := os.Stat(filepath.Join(jsDir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("%s is not installed in e2e/js: %v; %s", pkg, err, jsSetupHint)
		}
	}

	const secret = "e2e-stompjs-secret, 32 bytes or more"
	base, _ := startApp(t, "-jwt-secret", secret, "-auth-required")
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "alice",
		"exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatalf("signing the token: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(jsDir, "roundtrip.mjs"), wsURL(base), token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node roundtrip.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node stderr: %s", stderr.String())
	}

	var got roundtripResult
	line := strings.TrimSpace(stdout.String())
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("roundtrip.mjs output %q: %v", line, err)
	}
	want := roundtripResult{
		Connected:   true,
		Version:     "1.2",
		Receipt:     "e2e-receipt-1",
		Body:        "hello from stompjs: ünïcödé ✓",
		Header:      "stompjs-roundtrip",
		User:        "alice",
		Destination: "/topic/e2e",
	}
	if got != want {
		t.Errorf("stompjs observed\n got  %+v\n want %+v", got, want)
	}

	// The session ended with the client's DISCONNECT, as a normal close,
	// and its SEND passed the chain.
	waitFor(t, clientTimeout, func() error {
		m := scrape(t, base)
		if v := m["stompgate_sessions_closed_total{reason=\"normal\"}"]; v != 1 {
			return fmt.Errorf("sessions closed normally: got %v, want 1", v)
		}
		return nil
	})
	m := scrape(t, base)
	if got := m["stompgate_frames_passed_total{command=\"SEND\"}"]; got != 1 {
		t.Errorf("passed SEND frames: got %v, want 1", got)
	}
	if got := m.sum("stompgate_messages_delivered_total"); got != 1 {
		t.Errorf("messages delivered: got %v, want 1", got)
	}
}
