package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/syncbuf"
	"github.com/stompgate/stompgate/internal/testproc"
)

// TestOperatorLogs runs the program with JSON logs: start-up logs the
// effective configuration with the secret masked, and a session's end is
// one line with its id, principal, address, duration as text, counts and
// reason with its detail.
func TestOperatorLogs(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	base := "http://" + addr
	var out syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-admin-addr", "127.0.0.1:0", "-log-format", "json",
			"-jwt-secret", "very-secret-value, 32 bytes or more", "-max-frame-size", "2048", "-policy", testPolicyFile(t)},
			func(string) string { return "" }, &out)
	}()
	waitFor(t, clientTimeout, func() error {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	ws, _, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatal(err)
	}
	c := connectStomp(t, ws)
	// A SEND past the frame limit ends the session with a reason and a
	// detail.
	_ = c.Send("/topic/logs", "text/plain", bytes.Repeat([]byte("x"), 4096))
	var end map[string]any
	waitFor(t, clientTimeout, func() error {
		for _, line := range strings.Split(out.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "session closed" {
				end = m
				return nil
			}
		}
		return io.EOF
	})
	for _, k := range []string{"session", "principal", "ip", "received", "passed", "dropped"} {
		if _, ok := end[k]; !ok {
			t.Errorf("session end line lacks %q: %v", k, end)
		}
	}
	if end["reason"] != "protocol_error" || end["detail"] != "frame_too_large" {
		t.Errorf("reason %v detail %v, want protocol_error frame_too_large", end["reason"], end["detail"])
	}
	if d, ok := end["duration"].(string); !ok {
		t.Errorf("duration %#v, want text such as \"12ms\"", end["duration"])
	} else if _, err := time.ParseDuration(d); err != nil {
		t.Errorf("duration %q: %v", d, err)
	}
	logs := out.String()
	var first map[string]any
	if line, _, _ := strings.Cut(logs, "\n"); json.Unmarshal([]byte(line), &first) != nil || first["msg"] != "wsserver starting" || first["version"] != buildInfo().Version {
		t.Errorf("first log line %q, want \"wsserver starting\" with version %q", line, buildInfo().Version)
	}
	if strings.Contains(logs, "very-secret-value, 32 bytes or more") {
		t.Errorf("the JWT secret reached the log")
	}
	if !strings.Contains(logs, `"msg":"configuration"`) || !strings.Contains(logs, `"jwt-secret":"(set)"`) || !strings.Contains(logs, `"max-frame-size":"2048"`) {
		t.Errorf("no configuration line with the masked secret and the frame size:\n%s", logs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
