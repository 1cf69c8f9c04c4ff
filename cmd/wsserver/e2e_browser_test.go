package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// browserDir is the Node project of the browser test, relative to this
// package's directory (the working directory of its tests).
const browserDir = "../../e2e/browser"

// browserSetupHint says how to get Chromium, Node and the project's
// packages.
const browserSetupHint = "run the project's test command, `make test` (scripts/test.sh installs chromium, nodejs and npm when missing and runs `npm ci` in e2e/browser)"

// defaultChromium is Debian's chromium package; $CHROMIUM overrides it.
const defaultChromium = "/usr/bin/chromium"

// minBrowserNode is the oldest Node major version playwright-core
// supports (its package.json engines).
const minBrowserNode = 20

// atoi is strconv.Atoi with 0 for anything that is not a number.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// browserPolicy slows the handshake zone to one handshake per 2 s after
// the usual burst, so that the page's retry countdown shows a Retry-After
// longer than its own first backoff of 1 s.
const browserPolicy = `zones:
  - name: ws_handshake
    key: client_ip
    rate: 30r/m
    burst: 5
    routes:
      - method: GET
        path: /ws
        upstream: ws
destinations:
  - name: rooms
    pattern: /topic/room.*
    presence: true
`

// Flood settings, repeated from e2e/browser/test.mjs and the server's
// flags the test passes.
const (
	browserSendLimit = 20 // -send-limit, per -send-window of 1 s
	browserChatText  = "hello bob, ünïcödé ✓"
)

// browserResult is the JSON line e2e/browser/test.mjs prints.
type browserResult struct {
	// Members is the member list bob's page shows once alice and bob
	// have joined.
	Members []string `json:"members"`
	Chat    struct {
		From         string `json:"from"`
		Text         string `json:"text"`
		InputCleared bool   `json:"inputCleared"`
		OwnEcho      bool   `json:"ownEcho"`
	} `json:"chat"`
	Garbage struct {
		TextHeaderClose      int      `json:"textHeaderClose"`
		BinaryHeaderClose    int      `json:"binaryHeaderClose"`
		BinaryBodyClose      int      `json:"binaryBodyClose"`
		AliceSocketCloses    int      `json:"aliceSocketCloses"`
		BobSocketCloses      int      `json:"bobSocketCloses"`
		AfterGarbageReceived bool     `json:"afterGarbageReceived"`
		UTF8Errors           []string `json:"utf8Errors"`
	} `json:"garbage"`
	Flood struct {
		Seconds         float64 `json:"seconds"`
		Sent            uint64  `json:"sent"`
		Received        uint64  `json:"received"`
		Passed          uint64  `json:"passed"`
		Dropped         uint64  `json:"dropped"`
		ReceivedByOther uint64  `json:"receivedByOther"`
	} `json:"flood"`
	Retry struct {
		Status               string `json:"status"`
		RetryIn              int    `json:"retryIn"`
		RetryAfterMin        int    `json:"retryAfterMin"`
		RetryAfterMax        int    `json:"retryAfterMax"`
		Reconnected          bool   `json:"reconnected"`
		OthersStillConnected bool   `json:"othersStillConnected"`
	} `json:"retry"`
	Screenshots   []string `json:"screenshots"`
	PageErrors    []string `json:"pageErrors"`
	CSPViolations []string `json:"cspViolations"`
}

// browserOutDir is where the screenshots go: $STOMPGATE_ARTIFACTS/browser
// when that is set (kept after the test), a temporary directory otherwise.
func browserOutDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("STOMPGATE_ARTIFACTS"); dir != "" {
		out, err := filepath.Abs(filepath.Join(dir, "browser"))
		if err != nil {
			t.Fatalf("STOMPGATE_ARTIFACTS: %v", err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatalf("STOMPGATE_ARTIFACTS: %v", err)
		}
		return out
	}
	return t.TempDir()
}

// browserTools returns the node and Chromium binaries the browser tests
// run, failing the test with how to install them when either is missing,
// too old, or the Node project's packages are not installed.
func browserTools(t *testing.T) (node, chromium string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found in PATH: %v; %s", err, browserSetupHint)
	}
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil {
		t.Fatalf("node -p process.versions.node: %v; %s", err, browserSetupHint)
	} else if major, _, _ := strings.Cut(strings.TrimSpace(string(v)), "."); atoi(major) < minBrowserNode {
		t.Fatalf("node %s is too old for playwright-core, want %d or newer; %s", strings.TrimSpace(string(v)), minBrowserNode, browserSetupHint)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = defaultChromium
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("chromium not found: %v; %s", err, browserSetupHint)
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatalf("playwright-core is not installed in e2e/browser: %v; %s", err, browserSetupHint)
	}
	return node, chromium
}

// TestBrowserDemoPage drives the demo page in a real headless Chromium
// (e2e/browser/test.mjs): two pages chat in a room, and stay connected
// while a raw client sends the room frames that are not UTF-8 (Chromium
// fails a socket on a text message that is not); one floods and the
// other receives no more than the session limit lets through, while the
// flooding page shows the server's drops; a third page, refused at the
// handshake, shows the Retry-After countdown and connects after it.
func TestBrowserDemoPage(t *testing.T) {
	node, chromium := browserTools(t)

	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(browserPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	// Compression on: Chromium offers permessage-deflate, so every page
	// below runs compressed, its frames inflated and checked by the
	// server (TestBrowserThroughNginxOnAnyPort covers pages uncompressed).
	base, _ := startApp(t, "-policy", policyFile, "-send-limit", strconv.Itoa(browserSendLimit), "-send-window", "1s", "-compression")

	outDir := browserOutDir(t)
	t.Logf("screenshots in %s", outDir)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(browserDir, "test.mjs"), base, outDir)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node test.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node stderr: %s", stderr.String())
	}
	line := strings.TrimSpace(stdout.String())
	t.Logf("browser observed: %s", line)
	var got browserResult
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("test.mjs output %q: %v", line, err)
	}

	if len(got.PageErrors) > 0 {
		t.Errorf("uncaught exceptions in the page: %q", got.PageErrors)
	}
	if len(got.CSPViolations) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", got.CSPViolations)
	}

	t.Run("members", func(t *testing.T) {
		if m := got.Members; !slices.Equal(m, []string{"alice", "bob"}) {
			t.Errorf("bob's page lists %q in the room, want alice and bob", m)
		}
	})
	t.Run("chat", func(t *testing.T) {
		c := got.Chat
		if c.From != "alice" || c.Text != browserChatText {
			t.Errorf("bob's page shows %q: %q, want %q: %q", c.From, c.Text, "alice", browserChatText)
		}
		if !c.InputCleared {
			t.Error("alice's message field still holds the sent text")
		}
		if !c.OwnEcho {
			t.Error("alice's page does not show her own message once, marked as hers")
		}
	})

	t.Run("compression", func(t *testing.T) {
		m := scrape(t, base)
		opened, compressed := m["stompgate_sessions_opened_total"], m["stompgate_sessions_compressed_total"]
		if compressed < 2 || compressed > opened {
			t.Errorf("sessions that negotiated permessage-deflate: %v of %v opened, want alice's and bob's at least", compressed, opened)
		}
	})

	t.Run("not UTF-8", func(t *testing.T) {
		g := got.Garbage
		if g.TextHeaderClose != 1007 {
			t.Errorf("mallory's text message with a header that is not UTF-8: close %d, want 1007", g.TextHeaderClose)
		}
		if g.BinaryHeaderClose != 1008 {
			t.Errorf("mallory's binary message with a header that is not UTF-8: close %d, want 1008 after an ERROR", g.BinaryHeaderClose)
		}
		if g.BinaryBodyClose != 1000 {
			t.Errorf("mallory's binary body, then DISCONNECT: close %d, want 1000 (the frame is valid)", g.BinaryBodyClose)
		}
		if g.AliceSocketCloses != 0 || g.BobSocketCloses != 0 {
			t.Errorf("room members' WebSockets closed: alice %d, bob %d; want none", g.AliceSocketCloses, g.BobSocketCloses)
		}
		if !g.AfterGarbageReceived {
			t.Error("alice's chat line after the garbage did not reach bob")
		}
		if len(g.UTF8Errors) > 0 {
			t.Errorf("Chromium reported UTF-8 errors: %q", g.UTF8Errors)
		}
		m := scrape(t, base)
		if got := m[`stompgate_protocol_error_closes_total{kind="invalid_utf8"}`]; got != 2 {
			t.Errorf("protocol-error closes of kind invalid_utf8: %v, want 2", got)
		}
	})

	t.Run("flood", func(t *testing.T) {
		f := got.Flood
		// A fixed window of 1 s passes at most browserSendLimit frames
		// per window, and a flood of s seconds touches at most ⌈s⌉+1
		// windows.
		bound := uint64(browserSendLimit * (math.Ceil(f.Seconds) + 1))
		if f.ReceivedByOther == 0 || f.ReceivedByOther > bound {
			t.Errorf("flood messages alice received over %.1fs: got %d, want 1..%d", f.Seconds, f.ReceivedByOther, bound)
		}
		if f.ReceivedByOther > f.Passed {
			t.Errorf("alice received %d flood messages, more than the %d frames bob's session passed", f.ReceivedByOther, f.Passed)
		}
		if f.Dropped == 0 {
			t.Errorf("bob's page shows dropped 0 after flooding (%+v), want > 0", f)
		}
		if f.Passed+f.Dropped != f.Received {
			t.Errorf("bob's counts: passed %d + dropped %d != received %d", f.Passed, f.Dropped, f.Received)
		}
		if f.Received < f.Sent {
			t.Errorf("bob's counts: server received %d frames, fewer than the %d SENDs the page sent", f.Received, f.Sent)
		}
	})

	t.Run("retry after 429", func(t *testing.T) {
		r := got.Retry
		m := regexp.MustCompile(`^too many connection attempts, retrying in (\d+) s$`).FindStringSubmatch(r.Status)
		if m == nil {
			t.Fatalf("carol's status: got %q, want \"too many connection attempts, retrying in N s\"", r.Status)
		}
		if r.RetryIn < r.RetryAfterMin || r.RetryIn > r.RetryAfterMax {
			t.Errorf("carol's countdown started at %d s, want a Retry-After the server sent (%d..%d s)", r.RetryIn, r.RetryAfterMin, r.RetryAfterMax)
		}
		if !r.Reconnected {
			t.Error("carol's page did not connect after the countdown")
		}
		if !r.OthersStillConnected {
			t.Error("the handshake limit disturbed alice's or bob's open sessions")
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		if len(got.Screenshots) == 0 {
			t.Fatal("no screenshots")
		}
		for _, p := range got.Screenshots {
			if filepath.Dir(p) != outDir {
				t.Errorf("screenshot %s is not in %s", p, outDir)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("screenshot: %v", err)
				continue
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("screenshot %s is not a PNG", p)
			}
		}
	})
}
