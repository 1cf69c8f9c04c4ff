package scenario

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/sessionlimit"
)

// chainObserver feeds the interceptor chain's frame events to metrics, as
// wsserver does.
type chainObserver struct{ m *metrics.Metrics }

func (o chainObserver) FrameReceived(cmd string) { o.m.FrameReceived(cmd) }
func (o chainObserver) FramePassed(cmd string)   { o.m.FramePassed(cmd) }
func (o chainObserver) FrameDropped(cmd string, reason *outcome.Reason) {
	o.m.FrameDropped(cmd, metrics.DropReasonOf(reason))
}

// startStompgate serves a stompgate server with wsserver's chain
// (principal, session limit of limit SEND per second, metrics) and its
// /metrics page on a loopback httptest server, and returns the ws URL.
// With hs, the handshake limiter (in process, 3r/s burst 5) is in front.
func startStompgate(t *testing.T, limit int, hs ...handshake.Limit) string {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	obs := chainObserver{m}
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := interceptor.NewLimitStage(interceptor.LimitConfig{
		Limit: sessionlimit.Config{Limit: limit, Window: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Chain:  interceptor.NewChain(obs, principal, lim),
		Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ws http.Handler = srv
	if len(hs) > 0 {
		l, err := handshake.New(handshake.Config{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ws, err = handshake.Middleware(handshake.MiddlewareConfig{Limiter: l, Limit: hs[0], Logger: quiet}, srv)
		if err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/ws", ws)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
}

// testCommon is the options of a short run against the server at url,
// whose /metrics is on the same listener (the test servers here serve
// both on one).
func testCommon(url string, d time.Duration) Common {
	c := Common{URL: url, TopicPrefix: "/topic/loadtest.", Duration: d, Spread: true, NoProgress: true}
	if u, err := neturl.Parse(url); err == nil {
		c.MetricsURL = "http://" + u.Host + "/metrics"
	}
	return c
}

func classNamed(t *testing.T, r *Report, name string) report.ClassReport {
	t.Helper()
	for _, c := range r.Classes {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("report has no class %q", name)
	return report.ClassReport{}
}

func TestFloodAgainstStompgate(t *testing.T) {
	const limit = 20
	url := startStompgate(t, limit)
	cfg := floodConfig{
		Common: testCommon(url, 2*time.Second),
		normal: 12, normalRate: 2,
		abusers: 2, abuserRate: 200,
		roomSize: 5,
	}
	rep, err := flood(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	normal, abuser := classNamed(t, rep, "normal"), classNamed(t, rep, "abuser")

	if normal.Sent == 0 || normal.DeliveryRatio != 1 || normal.Delivered != normal.Sent {
		t.Errorf("normal: sent %d, delivered %d, ratio %v; want everything delivered", normal.Sent, normal.Delivered, normal.DeliveryRatio)
	}
	if normal.Subscribers != 3 || abuser.Subscribers != 2 {
		t.Errorf("observers: normal %d, abuser %d; want 3 rooms of 5 and one per abuser", normal.Subscribers, abuser.Subscribers)
	}
	if normal.Latency == nil || normal.Latency.Count != normal.Delivered {
		t.Errorf("normal latency %+v, want one sample per delivered message (%d)", normal.Latency, normal.Delivered)
	}
	// Each abuser has its own observer: what it received is what the
	// server let through from that session. A fixed window lets at most
	// limit per started second through.
	bound := int64(limit) * (int64(cfg.Duration/time.Second) + 1)
	if s := abuser.PerSubscriberDelivered; s == nil || s.Max > bound || s.Min == 0 {
		t.Errorf("abuser delivered per session %+v, want within (0, %d]", s, bound)
	}
	if abuser.Sent < 300 || abuser.DeliveryRatio >= 0.5 {
		t.Errorf("abuser: sent %d, ratio %v; want ≥ 300 sent and most dropped", abuser.Sent, abuser.DeliveryRatio)
	}

	srv := rep.Server
	if srv == nil || !srv.MetricsAvailable || srv.Frames == nil {
		t.Fatalf("server report %+v, want /metrics counters", srv)
	}
	if !*srv.Balanced {
		t.Errorf("server frames %+v: received != passed + dropped", *srv.Frames)
	}
	if got, want := srv.Frames.SendReceived, normal.Sent+abuser.Sent; got != want {
		t.Errorf("server SEND received %d, want %d (everything the tool sent)", got, want)
	}
	if got, want := srv.Frames.SendPassed, normal.Delivered+abuser.Delivered; got != want {
		t.Errorf("server SEND passed %d, want %d (everything the observers received)", got, want)
	}
	// delivered/s and sent/s per class, and the abusers' undelivered/s:
	// the normal users lost nothing, so theirs is left out.
	var names []string
	for _, s := range rep.Series {
		names = append(names, s.Name)
	}
	want := "normal delivered/s,normal sent/s,abuser delivered/s,abuser sent/s,abuser undelivered/s"
	if got := strings.Join(names, ","); got != want || len(rep.Series[0].Values) == 0 {
		t.Errorf("series %s, want %s, with values", got, want)
	}
}

func TestHandshakeStormUnlimitedServer(t *testing.T) {
	// A server without a handshake limiter accepts everything; the
	// expectation is still computed from the policy.
	url := startStompgate(t, 20)
	cfg := stormConfig{Common: testCommon(url, 10*time.Second), ips: 2, attempts: 8, rate: 0, policyRate: 3, policyBurst: 5}
	rep := storm(t.Context(), &cfg, nil)
	s := rep.Storm
	if s.Accepted != 16 || s.Limited != 0 || s.Other != 0 {
		t.Errorf("accepted %d, 429 %d, other %d (%v); want 16, 0, 0", s.Accepted, s.Limited, s.Other, s.OtherErrors)
	}
	for _, ip := range s.IPs {
		if ip.Attempts != 8 || ip.Expected < 6 {
			t.Errorf("%s: attempts %d, expected %d; want 8 and at least burst+1", ip.IP, ip.Attempts, ip.Expected)
		}
	}
	if s.IPs[0].IP != "127.0.0.2" || s.IPs[1].IP != "127.0.0.3" {
		t.Errorf("source IPs %s, %s; want 127.0.0.2, 127.0.0.3", s.IPs[0].IP, s.IPs[1].IP)
	}
}

func TestIdleAgainstStompgate(t *testing.T) {
	url := startStompgate(t, 20)
	cfg := idleConfig{Common: testCommon(url, 1500*time.Millisecond), sessions: 30, sessionsPerIP: 1, concurrency: 10, settle: 100 * time.Millisecond}
	rep := idle(t.Context(), &cfg, nil)
	ir := rep.Idle
	if ir.Opened != 30 || ir.Failed != 0 || ir.ClosedByServer != 0 {
		t.Errorf("opened %d, failed %d, closed by server %d (%v); want 30, 0, 0", ir.Opened, ir.Failed, ir.ClosedByServer, ir.Errors)
	}
	// The in-process server shares this process: its RSS comes from the
	// test registry's process collector.
	if ir.RSSSource != "metrics" || ir.RSSBefore <= 0 || ir.RSSAfter <= 0 {
		t.Errorf("RSS source %q, before %d, after %d; want metrics and positive values", ir.RSSSource, ir.RSSBefore, ir.RSSAfter)
	}
}

func TestHandshakeStormAgainstLimiter(t *testing.T) {
	url := startStompgate(t, 20, handshake.Limit{Name: "ws_handshake", Rate: 3000, Burst: 5})
	cfg := stormConfig{Common: testCommon(url, 10*time.Second), ips: 3, attempts: 12, rate: 0, policyRate: 3, policyBurst: 5}
	rep := storm(t.Context(), &cfg, nil)
	s := rep.Storm
	for _, ip := range s.IPs {
		// The server times a request on arrival, a moment after the tool
		// starts it: at a bucket boundary the two may differ by one.
		if d := ip.Accepted - ip.Expected; d < -1 || d > 1 || ip.Other != 0 {
			t.Errorf("%s: accepted %d, 429 %d, other %d; want %d accepted (±1) and the rest 429", ip.IP, ip.Accepted, ip.Limited, ip.Other, ip.Expected)
		}
		if ip.Accepted+ip.Limited != 12 {
			t.Errorf("%s: %d answered, want 12", ip.IP, ip.Accepted+ip.Limited)
		}
	}
}
