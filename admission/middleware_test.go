package admission

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

type countObserver struct {
	admitted int
	refused  map[string]int
}

func (o *countObserver) Admitted()             { o.admitted++ }
func (o *countObserver) Refused(reason string) { o.refused[reason]++ }

func upgradeRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/ws", nil)
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Connection", "keep-alive, Upgrade")
	return r
}

func TestMiddlewareRejectsBadConfig(t *testing.T) {
	ok := http.NotFoundHandler()
	if _, err := Middleware(MiddlewareConfig{}, ok); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no Gate: %v", err)
	}
	g := newGate(t, Config{})
	if _, err := Middleware(MiddlewareConfig{Gate: g}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no next: %v", err)
	}
}

// A refusal is a 503 with Retry-After and a body naming the reason,
// written before next is called; a plain GET probe spends no token.
func TestMiddlewareRefuses(t *testing.T) {
	g := newGate(t, Config{Rate: 1, Burst: 1})
	obs := &countObserver{refused: map[string]int{}}
	reached := 0
	h, err := Middleware(MiddlewareConfig{Gate: g, Observer: obs, Now: func() time.Time { return t0 }},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	if err != nil {
		t.Fatal(err)
	}
	// The probe passes without spending the one token...
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ws", nil))
	if w.Code != http.StatusOK || reached != 1 {
		t.Fatalf("probe: %d, reached %d", w.Code, reached)
	}
	// ...which the handshake takes.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, upgradeRequest())
	if w.Code != http.StatusOK || reached != 2 || obs.admitted != 1 {
		t.Fatalf("handshake: %d, reached %d, admitted %d", w.Code, reached, obs.admitted)
	}
	for _, r := range []*http.Request{upgradeRequest(), httptest.NewRequest(http.MethodGet, "/ws", nil)} {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
		if w.Code != http.StatusServiceUnavailable || err != nil || secs < 1 || secs > 60 {
			t.Errorf("over the rate: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
		}
		if got := w.Header().Get("Connection"); got != "close" {
			t.Errorf("Connection %q on a refusal, want close", got)
		}
		if body := w.Body.String(); !strings.Contains(body, "server busy (rate)") || !strings.Contains(body, "retry after "+strconv.Itoa(secs)+"s") {
			t.Errorf("body %q", body)
		}
	}
	if reached != 2 || obs.refused[outcome.AdmissionRate] != 2 {
		t.Errorf("reached %d, refusals %v", reached, obs.refused)
	}
}

func TestIsUpgrade(t *testing.T) {
	for _, c := range []struct {
		upgrade, connection string
		want                bool
	}{
		{"websocket", "Upgrade", true},
		{"WebSocket", "keep-alive, upgrade", true},
		{"websocket", "keep-alive", false},
		{"h2c", "Upgrade", false},
		{"", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/ws", nil)
		r.Header.Set("Upgrade", c.upgrade)
		r.Header.Set("Connection", c.connection)
		if got := isUpgrade(r); got != c.want {
			t.Errorf("Upgrade %q Connection %q: %v, want %v", c.upgrade, c.connection, got, c.want)
		}
	}
}

// A panic below the middleware gives the slot back before it goes on up.
func TestMiddlewareReleasesOnPanic(t *testing.T) {
	g := newGate(t, Config{MaxSessions: 1})
	h, err := Middleware(MiddlewareConfig{Gate: g}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on up")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), upgradeRequest())
	}()
	if st := g.StateAt(t0); st.Sessions != 0 {
		t.Errorf("sessions after the panic = %d, want 0", st.Sessions)
	}
}

// With Checks, the Gate is looked at first: a busy instance refuses
// before any check runs; a request a check refuses never took a token
// or slot and is not counted admitted; one that reaches next takes them
// and holds its slot until the session ends.
func TestMiddlewareChecks(t *testing.T) {
	g := newGate(t, Config{Rate: 0.001, Burst: 1, MaxSessions: 10})
	obs := &countObserver{refused: map[string]int{}}
	checked, reached := 0, 0
	refuse := true
	h, err := Middleware(MiddlewareConfig{Gate: g, Observer: obs, Now: func() time.Time { return t0 },
		Checks: func(next http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				checked++
				if refuse {
					http.Error(w, "too many", http.StatusTooManyRequests)
					return
				}
				next.ServeHTTP(w, r)
			}), nil
		}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	if err != nil {
		t.Fatal(err)
	}
	// The check refuses three times: the one token comes back each time.
	for i := range 3 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, upgradeRequest())
		if w.Code != http.StatusTooManyRequests || checked != i+1 {
			t.Fatalf("refused by the check: %d, checked %d", w.Code, checked)
		}
	}
	if st := g.StateAt(t0); st.Sessions != 0 || obs.admitted != 0 || reached != 0 {
		t.Fatalf("after the check's refusals: %d sessions, %d admitted, %d reached", st.Sessions, obs.admitted, reached)
	}
	refuse = false
	w := httptest.NewRecorder()
	h.ServeHTTP(w, upgradeRequest())
	if reached != 1 || obs.admitted != 1 {
		t.Fatalf("passing the check: reached %d, admitted %d", reached, obs.admitted)
	}
	// next never ran the session-end functions: the slot is held.
	if st := g.StateAt(t0); st.Sessions != 1 {
		t.Errorf("sessions after a handoff = %d, want 1", st.Sessions)
	}
	// The token is spent: the next is refused before the check runs.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, upgradeRequest())
	if w.Code != http.StatusServiceUnavailable || checked != 4 || obs.refused[outcome.AdmissionRate] != 1 {
		t.Errorf("over the rate: %d, checked %d, refusals %v", w.Code, checked, obs.refused)
	}
}

// A panic in a check gives the token and the slot back.
func TestMiddlewareChecksPanic(t *testing.T) {
	g := newGate(t, Config{Rate: 0.001, Burst: 1})
	h, err := Middleware(MiddlewareConfig{Gate: g, Now: func() time.Time { return t0 },
		Checks: func(http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), nil
		}}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on up")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), upgradeRequest())
	}()
	if d := g.AdmitAt(t0); !d.Admitted {
		t.Errorf("token not given back after the panic: %+v", d)
	}
}

// The Middleware's clock is read with the Gate's lock held, so that
// decisions are taken in the order of their instants and the bucket
// bounds them by when they happened.
func TestMiddlewareReadsClockUnderLock(t *testing.T) {
	g := newGate(t, Config{Rate: 10, Burst: 1})
	reads := 0
	h, err := Middleware(MiddlewareConfig{Gate: g, Now: func() time.Time {
		reads++
		if g.mu.TryLock() {
			g.mu.Unlock()
			t.Error("clock read without the Gate's lock")
		}
		return t0
	}}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	h.ServeHTTP(httptest.NewRecorder(), upgradeRequest())
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/ws", nil))
	// The upgrade: a look, then the taking; the plain GET: a look.
	if reads != 3 {
		t.Errorf("clock read %d times for an upgrade and a GET, want 3", reads)
	}
}

// A request whose check is still deciding holds no token: with a burst of
// one, another client is admitted meanwhile, and the slow one's refusal
// then changes nothing. A flood from one address, refused by its own
// limit, thus never keeps the bucket empty for others.
func TestMiddlewareChecksHoldNoToken(t *testing.T) {
	g := newGate(t, Config{Rate: 10, Burst: 1})
	started, release := make(chan struct{}), make(chan struct{})
	h, err := Middleware(MiddlewareConfig{Gate: g, Now: func() time.Time { return t0 },
		Checks: func(next http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Flood") != "" {
					close(started)
					<-release
					http.Error(w, "too many", http.StatusTooManyRequests)
					return
				}
				next.ServeHTTP(w, r)
			}), nil
		}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusSwitchingProtocols) }))
	if err != nil {
		t.Fatal(err)
	}
	flood := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := upgradeRequest()
		r.Header.Set("X-Flood", "1")
		h.ServeHTTP(flood, r)
	}()
	<-started
	honest := httptest.NewRecorder()
	h.ServeHTTP(honest, upgradeRequest())
	close(release)
	<-done
	if honest.Code != http.StatusSwitchingProtocols {
		t.Errorf("the honest upgrade while another's check ran: %d, want 101", honest.Code)
	}
	if flood.Code != http.StatusTooManyRequests {
		t.Errorf("the flooding upgrade: %d, want 429", flood.Code)
	}
	if st := g.StateAt(t0); st.Sessions != 1 {
		t.Errorf("sessions = %d, want 1 (the honest one)", st.Sessions)
	}
}
