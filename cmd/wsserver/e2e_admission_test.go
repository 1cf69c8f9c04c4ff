package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-stomp/stomp/v3"
)

// admitFrom performs a WebSocket handshake from ip (X-Real-IP, believed
// from the loopback proxy) and, when it is accepted, CONNECTs the go-stomp
// client over it. A refusal returns the response.
func admitFrom(t *testing.T, base, ip string) (*stomp.Conn, *http.Response) {
	t.Helper()
	ws, resp, err := dialHeader(t, wsURL(base), ip)
	if err != nil {
		if resp == nil {
			t.Fatalf("handshake from %s: %v", ip, err)
		}
		return nil, resp
	}
	return connectStomp(t, ws), nil
}

// wantBusy fails the test unless resp is the admission's 503 for reason:
// Retry-After whole seconds within [1, most], the body naming the reason.
func wantBusy(t *testing.T, resp *http.Response, reason string, most int) {
	t.Helper()
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got %s, want 503 for %s", describe(resp), reason)
	}
	ra := resp.Header.Get("Retry-After")
	secs, err := strconv.Atoi(ra)
	if err != nil || secs < 1 || secs > most {
		t.Errorf("Retry-After %q, want whole seconds in [1, %d]", ra, most)
	}
	body := readBody(resp)
	if want := "server busy (" + reason + "), retry after " + ra + "s"; !strings.Contains(body, want) {
		t.Errorf("503 body %q, want it to contain %q", body, want)
	}
}

// readiness reads /readyz of base (public or admin): its status and
// JSON body.
func readReadiness(t *testing.T, base string) (int, map[string]any) {
	t.Helper()
	code, body := get(t, base, "/readyz")
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/readyz %d body %q: %v", code, body, err)
	}
	return code, doc
}

// wantReadiness fails the test unless /readyz on both listeners says
// ready (200) or not (503) with the admission check's refusing reason.
func wantReadiness(t *testing.T, base string, ready bool, refusing string, sessions int) {
	t.Helper()
	for _, b := range []string{base, adminBase(t, base)} {
		code, doc := readReadiness(t, b)
		adm, _ := doc["admission"].(map[string]any)
		wantCode := http.StatusOK
		if !ready {
			wantCode = http.StatusServiceUnavailable
		}
		got, _ := adm["refusing"].(string)
		if code != wantCode || doc["ready"] != ready || adm["ready"] != ready || got != refusing ||
			adm["sessions"] != float64(sessions) {
			t.Errorf("%s/readyz: %d %v, want %d ready %v refusing %q with %d sessions", b, code, doc, wantCode, ready, refusing, sessions)
		}
	}
}

// TestAdmissionSessionCap: at -max-sessions the next handshake, and a
// plain GET of the WebSocket path, get 503 with Retry-After and the
// reason, before any WebSocket work; the sessions already open keep
// delivering; /readyz on both listeners says why; a session that ends
// gives its slot back, once.
func TestAdmissionSessionCap(t *testing.T) {
	base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-max-sessions", "2", "-admit-rate", "1000")
	wantReadiness(t, base, true, "", 0)
	a, _ := admitFrom(t, base, "198.51.100.1")
	b, _ := admitFrom(t, base, "198.51.100.2")
	wantReadiness(t, base, false, "sessions", 2)

	_, resp := admitFrom(t, base, "198.51.100.3")
	wantBusy(t, resp, "sessions", 60)
	// The demo page probes the path with a plain GET: busy too.
	probe, err := http.Get(base + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	wantBusy(t, probe, "sessions", 60)
	probe.Body.Close()

	// The open sessions are untouched.
	sub := subscribe(t, a, "/topic/admission")
	if err := b.Send("/topic/admission", "text/plain", []byte("still here"), nil); err != nil {
		t.Fatalf("SEND at the cap: %v", err)
	}
	if m := nextMessage(t, sub); string(m.Body) != "still here" {
		t.Errorf("got %q", m.Body)
	}

	// One ends: its slot comes back (once: a second new session still
	// finds the cap).
	disconnect(t, b)
	waitFor(t, clientTimeout, func() error {
		if code, _ := get(t, base, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz %d after a session ended", code)
		}
		return nil
	})
	if c, resp := admitFrom(t, base, "198.51.100.4"); c == nil {
		t.Fatalf("handshake after a slot came back: %s", describe(resp))
	}
	_, resp = admitFrom(t, base, "198.51.100.5")
	wantBusy(t, resp, "sessions", 60)

	m := scrape(t, base)
	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"stompgate_admission_refused_total", []string{`reason="sessions"`}, 3},
		{"stompgate_admission_refused_total", []string{`reason="rate"`}, 0},
		{"stompgate_admission_admitted_total", nil, 3},
		{"stompgate_handshakes_total", []string{`result="rejected_admission"`}, 3},
		{"stompgate_admission_max_sessions", nil, 2},
		{"stompgate_admission_sessions", nil, 2},
		{"stompgate_admission_refusing", []string{`reason="sessions"`}, 1},
	} {
		if got := m.sum(c.name, c.match...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
}

// TestAdmissionRate: a burst of handshakes above -admit-burst from
// distinct addresses gets 503 (rate) beyond the burst while the first
// ones pass; and a refusal spends no token: handshakes refused at the
// session cap leave the bucket's tokens to the next admitted one.
func TestAdmissionRate(t *testing.T) {
	t.Run("burst", func(t *testing.T) {
		// A token every 100 s: only the burst passes within the test.
		base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-admit-rate", "0.01", "-admit-burst", "4", "-max-sessions", "100")
		const n = 8
		var (
			mu       sync.Mutex
			admitted int
			refused  []*http.Response
			wg       sync.WaitGroup
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws, resp, err := dialHeader(t, wsURL(base), fmt.Sprintf("198.51.100.%d", 10+i))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					admitted++
					connectStomp(t, ws)
					return
				}
				refused = append(refused, resp)
			}()
		}
		wg.Wait()
		if admitted != 4 || len(refused) != n-4 {
			t.Fatalf("%d admitted, %d refused, want 4 and %d", admitted, len(refused), n-4)
		}
		for _, resp := range refused {
			wantBusy(t, resp, "rate", 60)
		}
		// An empty bucket is no reason to leave the rotation.
		wantReadiness(t, base, true, "", 4)
		m := scrape(t, base)
		if got := m.sum("stompgate_admission_refused_total", `reason="rate"`); got != n-4 {
			t.Errorf("refused{rate} = %v, want %d", got, n-4)
		}
	})
	t.Run("refusals spend no token", func(t *testing.T) {
		base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-admit-rate", "0.001", "-admit-burst", "2", "-max-sessions", "1")
		first, _ := admitFrom(t, base, "198.51.100.20")
		for i := range 5 {
			_, resp := admitFrom(t, base, fmt.Sprintf("198.51.100.%d", 21+i))
			wantBusy(t, resp, "sessions", 60)
		}
		disconnect(t, first)
		waitFor(t, clientTimeout, func() error {
			if code, _ := get(t, base, "/readyz"); code != http.StatusOK {
				return fmt.Errorf("/readyz %d after the session ended", code)
			}
			return nil
		})
		// The burst's second token is still there...
		second, resp := admitFrom(t, base, "198.51.100.30")
		if second == nil {
			t.Fatalf("handshake with a token left: %s", describe(resp))
		}
		disconnect(t, second)
		waitFor(t, clientTimeout, func() error {
			if code, _ := get(t, base, "/readyz"); code != http.StatusOK {
				return fmt.Errorf("/readyz %d after the session ended", code)
			}
			return nil
		})
		// ...and was the last: with a free slot, the bucket bites.
		_, resp = admitFrom(t, base, "198.51.100.31")
		wantBusy(t, resp, "rate", 60)
		m := scrape(t, base)
		if got := m.sum("stompgate_admission_admitted_total"); got != 2 {
			t.Errorf("admitted = %v, want 2", got)
		}
		if got := m.sum("stompgate_admission_refused_total", `reason="sessions"`); got != 5 {
			t.Errorf("refused{sessions} = %v, want 5", got)
		}
		if got := m.sum("stompgate_admission_refused_total", `reason="rate"`); got != 1 {
			t.Errorf("refused{rate} = %v, want 1", got)
		}
	})
}

// TestAdmissionMemory: with the memory in use above the threshold of a
// tiny -memory-limit (1 MiB: any Go process holds more), new sessions are
// refused for memory and /readyz says so. Go's soft limit is set by run
// only, so this test's process is not held to it.
func TestAdmissionMemory(t *testing.T) {
	base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-memory-limit", "1MiB")
	_, resp := admitFrom(t, base, "198.51.100.40")
	wantBusy(t, resp, "memory", 60)
	wantReadiness(t, base, false, "memory", 0)
	_, doc := readReadiness(t, base)
	if adm := doc["admission"].(map[string]any); adm["memory_limit"] != float64(1<<20) || adm["memory_used"].(float64) <= 0.9*(1<<20) {
		t.Errorf("readiness %v, want memory_used above 90%% of memory_limit 1048576", adm)
	}
	m := scrape(t, base)
	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"stompgate_admission_refused_total", []string{`reason="memory"`}, 1},
		{"stompgate_admission_memory_limit_bytes", nil, 1 << 20},
		{"stompgate_admission_refusing", []string{`reason="memory"`}, 1},
	} {
		if got := m.sum(c.name, c.match...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
}

// TestAdmissionSettingErrors: bad admission settings stop start-up with
// an error naming the setting; a cap the open-file limit cannot hold is
// one of them.
func TestAdmissionSettingErrors(t *testing.T) {
	limit, ok := fileLimit()
	if !ok {
		t.Fatal("no RLIMIT_NOFILE: the cap above it cannot be tested")
	}
	over := strconv.FormatUint(limit, 10)
	expectSettingErrors(t, []settingCase{
		{"cap above the file limit", []string{"-max-sessions", over}, nil, "-max-sessions"},
		{"cap above the file limit in env", nil, map[string]string{"WSSERVER_MAX_SESSIONS": over}, "WSSERVER_MAX_SESSIONS"},
		{"negative cap", []string{"-max-sessions", "-2"}, nil, "-max-sessions"},
		{"negative rate", []string{"-admit-rate", "-0.5"}, nil, "-admit-rate"},
		{"negative burst", []string{"-admit-burst", "-1"}, nil, "-admit-burst"},
		{"threshold above 1", []string{"-memory-admit-threshold", "1.5"}, nil, "-memory-admit-threshold"},
		{"threshold 0", []string{"-memory-admit-threshold", "0"}, nil, "-memory-admit-threshold"},
		{"memory limit without a number", []string{"-memory-limit", "lots"}, nil, "-memory-limit"},
		{"memory limit without its unit", []string{"-memory-limit", "512"}, nil, "-memory-limit"},
		{"retry-after-max too long", []string{"-retry-after-max", "1h"}, nil, "-retry-after-max"},
		{"retry-after-max below a second", []string{"-retry-after-max", "500ms"}, nil, "-retry-after-max"},
		{"bad GOMEMLIMIT", nil, map[string]string{"GOMEMLIMIT": "much"}, "GOMEMLIMIT"},
	})
	// -1 turns the cap and the rate off, and starts.
	expectStarts(t, "-max-sessions", "-1", "-admit-rate", "-1")
}

// TestAdmissionDefaults: the derived defaults follow the open-file limit
// and GOMEMLIMIT, and -memory-limit sets Go's soft limit when run starts.
func TestAdmissionDefaults(t *testing.T) {
	limit, ok := fileLimit()
	if !ok {
		t.Fatal("no RLIMIT_NOFILE")
	}
	var st settings
	if err := st.parse(nil, func(k string) string {
		return map[string]string{"GOMEMLIMIT": "256MiB"}[k]
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.validate(); err != nil {
		t.Fatal(err)
	}
	headroom := max(uint64(fdHeadroomMin), limit/10)
	if got, want := st.admit.cfg.MaxSessions, int(limit-headroom); limit > 2*headroom && got != want {
		t.Errorf("derived -max-sessions = %d, want %d (RLIMIT_NOFILE %d)", got, want, limit)
	}
	if got, want := st.admit.cfg.Rate, max(float64(st.admit.cfg.MaxSessions)/admitRefillTime, minAdmitRate); got != want {
		t.Errorf("derived -admit-rate = %v, want %v", got, want)
	}
	if st.admit.cfg.MemoryLimit != 256<<20 || st.admit.setMemoryLimit {
		t.Errorf("GOMEMLIMIT 256MiB: limit %d (set by us: %v), want 268435456 left to the runtime", st.admit.cfg.MemoryLimit, st.admit.setMemoryLimit)
	}

	// -memory-limit sets Go's soft limit; it is put back afterwards.
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	expectStarts(t, "-memory-limit", "3GiB")
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Errorf("soft memory limit after -memory-limit 3GiB = %d", got)
	}
}

// TestShutdownSaysWhenToComeBack: the sessions a shutdown ends get an
// ERROR whose retry-after is drawn over the window the admission rate
// needs for all of them (4 sessions at 1/s: 1 to 4 s), so their clients
// do not all come back at once.
func TestShutdownSaysWhenToComeBack(t *testing.T) {
	base, a := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-admit-rate", "1", "-admit-burst", "4")
	var clients []*frameClient
	for i := range 4 {
		c := dialFrom(t, base, fmt.Sprintf("198.51.100.%d", 50+i))
		c.Send(connectFrame(""))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("session %d: %s %v", i, f.Command, f.Headers)
		}
		clients = append(clients, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	if err := a.stomp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		e := c.Expect("ERROR")
		ra, err := strconv.Atoi(e.Get("retry-after"))
		if e.Get("message") != "server shutting down" || err != nil || ra < 1 || ra > 4 {
			t.Errorf("client %d: ERROR %q retry-after %q, want shutting down and 1 to 4", i, e.Get("message"), e.Get("retry-after"))
		}
	}
}
