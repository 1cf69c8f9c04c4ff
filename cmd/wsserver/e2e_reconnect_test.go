package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reconnectPolicy allows one handshake per 5 s and no burst, so that a
// refused handshake's Retry-After is a few seconds.
const reconnectPolicy = `zones:
  - name: ws_handshake
    key: client_ip
    rate: 12r/m
    burst: 0
    routes:
      - method: GET
        path: /ws
        upstream: ws
`

// reconnectWait is one wait the helper announced through onWait.
type reconnectWait struct {
	MS         float64 `json:"ms"`
	Kind       string  `json:"kind"`
	RetryAfter *int    `json:"retryAfter"`
	Failures   int     `json:"failures"`
	At         float64 `json:"at"`
}

// reconnectResult is the JSON line e2e/js/reconnect.mjs prints.
type reconnectResult struct {
	RetryAfter struct {
		SpentWith int `json:"spentWith"`
		Probes    []struct {
			Status     int     `json:"status"`
			RetryAfter string  `json:"retryAfter"`
			At         float64 `json:"at"`
		} `json:"probes"`
		Waits        []reconnectWait `json:"waits"`
		Attempts     []float64       `json:"attempts"`
		Connected    bool            `json:"connected"`
		AppOnConnect bool            `json:"appOnConnect"`
	} `json:"retryAfter"`
	Backoff struct {
		Draws  []float64       `json:"draws"`
		Waits  []reconnectWait `json:"waits"`
		Errors []string        `json:"errors"`
	} `json:"backoff"`
	Refusal struct {
		Waits     []reconnectWait `json:"waits"`
		Attempts  []float64       `json:"attempts"`
		Connected bool            `json:"connected"`
	} `json:"refusal"`
	LostUnstable []reconnectWait `json:"lostUnstable"`
	LostStable   []reconnectWait `json:"lostStable"`
}

// TestStompJSReconnect runs the reconnect helper the server ships for
// browsers (web/static/reconnect.js) with @stomp/stompjs under Node: a
// handshake refused by the handshake limiter is probed, and the next
// attempt waits the Retry-After the probe got plus less than a second,
// never less; CONNECTs refused with ERROR frames are retried after waits
// drawn uniformly below a ceiling that doubles up to the cap; a session
// the server ends right after CONNECTED does not reset the schedule, one
// that stayed up does; an ERROR frame's retry-after header (from a
// stand-in server in the script) is honoured like the probe's.
func TestStompJSReconnect(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found in PATH: %v; %s", err, jsSetupHint)
	}
	for _, pkg := range []string{"@stomp/stompjs", "ws"} {
		if _, err := os.Stat(filepath.Join(jsDir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("%s is not installed in e2e/js: %v; %s", pkg, err, jsSetupHint)
		}
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte(reconnectPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	limited, _ := startApp(t, "-policy", pol)
	auth, _ := startApp(t, "-jwt-secret", "e2e-reconnect-secret, 32 bytes or more", "-auth-required")
	plain, _ := startApp(t)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(jsDir, "reconnect.mjs"), wsURL(limited), wsURL(auth), wsURL(plain))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node reconnect.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	line := strings.TrimSpace(stdout.String())
	t.Logf("stompjs observed: %s", line)
	var got reconnectResult
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("reconnect.mjs output %q: %v", line, err)
	}

	t.Run("retry-after", func(t *testing.T) {
		r := got.RetryAfter
		if !r.Connected || !r.AppOnConnect {
			t.Fatalf("connected %v, application's onConnect called %v; want both", r.Connected, r.AppOnConnect)
		}
		if len(r.Waits) == 0 || len(r.Probes) == 0 {
			t.Fatalf("waits %+v, probes %+v; want a probe and a wait after the refused handshake", r.Waits, r.Probes)
		}
		if len(r.Attempts) != len(r.Waits)+1 {
			t.Fatalf("%d attempts for %d waits, want one more attempt than waits", len(r.Attempts), len(r.Waits))
		}
		for i, w := range r.Waits {
			p := r.Probes[min(i, len(r.Probes)-1)]
			if w.Kind == "limited" {
				sent, err := strconv.Atoi(p.RetryAfter)
				if p.Status != 429 || err != nil || w.RetryAfter == nil || *w.RetryAfter != sent {
					t.Errorf("wait %d: kind %s, Retry-After %v; want the probe's 429 Retry-After %q", i, w.Kind, w.RetryAfter, p.RetryAfter)
					continue
				}
				if lo := float64(sent * 1000); w.MS < lo || w.MS >= lo+1000 {
					t.Errorf("wait %d: %.1f ms, want in [%v, %v) ms: the Retry-After plus less than a second", i, w.MS, lo, lo+1000)
				}
			}
			// The next attempt came no sooner than the wait announced
			// (timers never fire early; 1 ms for the clock's rounding).
			if gap := r.Attempts[i+1] - w.At; gap < w.MS-1 {
				t.Errorf("wait %d of %.1f ms: the next attempt came %.1f ms later", i, w.MS, gap)
			}
		}
		if r.Waits[0].Kind != "limited" {
			t.Errorf("first wait %+v, want kind limited (429 from the probe)", r.Waits[0])
		}
	})

	t.Run("backoff", func(t *testing.T) {
		b := got.Backoff
		if len(b.Waits) < 6 || len(b.Draws) < len(b.Waits) {
			t.Fatalf("waits %+v, draws %v; want 6 waits, each with its draw", b.Waits, b.Draws)
		}
		for i, w := range b.Waits {
			ceiling := math.Min(400, 50*math.Pow(2, float64(i)))
			if w.Kind != "refused" || w.RetryAfter != nil || w.Failures != i+1 {
				t.Errorf("wait %d: %+v, want kind refused, no Retry-After, failures %d", i, w, i+1)
			}
			if w.MS < 0 || w.MS >= ceiling || math.Abs(w.MS-b.Draws[i]*ceiling) > 1e-9 {
				t.Errorf("wait %d: %.3f ms, want the draw %.3f × the ceiling %v ms, in [0, %v)", i, w.MS, b.Draws[i], ceiling, ceiling)
			}
		}
		if len(b.Errors) == 0 {
			t.Error("no ERROR frame reached the application's onStompError")
		}
	})

	t.Run("reset after a stable connection", func(t *testing.T) {
		// random() is 0.5: each wait is half its ceiling, base 20 ms.
		check := func(name string, waits []reconnectWait, want []float64) {
			if len(waits) != len(want) {
				t.Fatalf("%s: waits %+v, want %d", name, waits, len(want))
			}
			for i, w := range waits {
				if w.Kind != "lost" || w.MS != want[i] {
					t.Errorf("%s: wait %d %+v, want kind lost, %v ms", name, i, w, want[i])
				}
			}
		}
		check("sessions shorter than stable", got.LostUnstable, []float64{10, 20, 40})
		check("sessions that count as stable", got.LostStable, []float64{10, 10, 10})
	})

	t.Run("ERROR frame retry-after", func(t *testing.T) {
		r := got.Refusal
		if !r.Connected || len(r.Waits) != 1 || len(r.Attempts) != 2 {
			t.Fatalf("%+v; want one wait between two attempts, then CONNECTED", r)
		}
		w := r.Waits[0]
		if w.Kind != "refused" || w.RetryAfter == nil || *w.RetryAfter != 1 || w.MS < 1000 || w.MS >= 2000 {
			t.Errorf("wait %+v, want kind refused, Retry-After 1, in [1000, 2000) ms", w)
		}
		if gap := r.Attempts[1] - w.At; gap < w.MS-1 {
			t.Errorf("wait of %.1f ms: the next attempt came %.1f ms later", w.MS, gap)
		}
	})
}
