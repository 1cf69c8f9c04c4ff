package main

// Helpers of the end-to-end tests: the wired app on an httptest listener,
// real STOMP clients over WebSocket, and a /metrics scraper.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/policy"
)

// clientTimeout bounds every client step of the tests: a dial, a CONNECT,
// a RECEIPT, a message. It is far above what any step needs; reaching it
// means the step is stuck.
const clientTimeout = stomptest.Timeout

// testPolicy is the default policy with the handshake zone slowed from
// 3r/s to 30r/m, burst 5 as before. From rest the same burst+1 handshakes
// pass and the next is refused, but the bucket drains one request per 2 s
// instead of per 333 ms, so a burst stays a burst on a loaded machine.
const testPolicy = `zones:
  - name: ws_handshake
    key: client_ip
    rate: 30r/m
    burst: 5
    routes:
      - {method: GET, path: /ws, upstream: ws}
  - name: room_create
    key: client_ip
    rate: 2r/s
    burst: 4
    routes:
      - {method: POST, path: /rooms, upstream: api}
  - name: room_join
    key: client_ip
    rate: 5r/s
    burst: 10
    routes:
      - {method: POST, path: "/rooms/{id}/join", upstream: api}
`

// testPolicyFile writes testPolicy to a file for -policy.
func testPolicyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(testPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parsedTestPolicy is testPolicy for rendering the nginx config, so nginx
// and the server hold the same numbers.
func parsedTestPolicy(t *testing.T) policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(testPolicy))
	if err != nil {
		t.Fatalf("test policy: %v", err)
	}
	return p
}

// startApp wires the server as run does, from the command-line args on
// top of the defaults (no environment), and serves it on an httptest
// listener. It returns the listener's base URL ("http://127.0.0.1:port")
// and the app. The sessions are shut down and the listener closed when the
// test ends.
func startApp(t *testing.T, args ...string) (string, *app) {
	t.Helper()
	return startAppEnv(t, nil, args...)
}

// startAppEnv is startApp with environment variables (WSSERVER_*).
func startAppEnv(t *testing.T, env map[string]string, args ...string) (string, *app) {
	t.Helper()
	return startAppWith(t, appOptions{env: env}, args...)
}

// appOptions are what startAppWith takes beyond the flags.
type appOptions struct {
	env map[string]string // WSSERVER_* variables
	// edit, when not nil, changes the settings once they are parsed and
	// validated: for what no flag sets.
	edit func(*settings)
	// listen serves through the server's own Listener, as run does, so
	// that accepted sockets get -socket-send-buffer.
	listen bool
}

// startAppWith is startApp with o.
func startAppWith(t *testing.T, o appOptions, args ...string) (string, *app) {
	t.Helper()
	env := o.env
	if !slices.Contains(args, "-policy") && env["WSSERVER_POLICY"] == "" {
		args = append([]string{"-policy", testPolicyFile(t)}, args...)
	}
	var st settings
	if err := st.parse(args, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatalf("settings %q: %v", args, err)
	}
	if err := st.validate(); err != nil {
		t.Fatalf("settings %q: %v", args, err)
	}
	if o.edit != nil {
		o.edit(&st)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newApp(&st, logger)
	if err != nil {
		t.Fatalf("newApp %q: %v", args, err)
	}
	hs := httptest.NewUnstartedServer(a.handler)
	if o.listen {
		hs.Listener = a.stomp.Listener(hs.Listener)
	}
	hs.Start()
	admin := httptest.NewServer(a.admin)
	registerAdmin(t, hs.URL, admin.URL)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		if err := a.stomp.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
		admin.Close()
		a.close()
	})
	return hs.URL, a
}

// adminBases maps a public base URL to the base URL of the same
// server's admin listener (metrics), for scrape.
var adminBases sync.Map

// registerAdmin records admin as the admin listener of the server at
// base until the test ends.
func registerAdmin(t *testing.T, base, admin string) {
	t.Helper()
	adminBases.Store(base, admin)
	t.Cleanup(func() { adminBases.Delete(base) })
}

// adminBase returns the admin listener of the server at base.
func adminBase(t *testing.T, base string) string {
	t.Helper()
	admin, ok := adminBases.Load(base)
	if !ok {
		t.Fatalf("no admin listener known for %s", base)
	}
	return admin.(string)
}

// wsURL turns the base URL of startApp (or of an nginx in front) into the
// WebSocket endpoint's URL.
func wsURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/ws"
}

// dialWS performs the WebSocket handshake only. On a refused handshake it
// returns the response (with up to 1 KiB of its body) and the error. A
// connection it returns is closed when the test ends.
func dialWS(t *testing.T, url string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	return stomptest.DialWebSocket(t, url)
}

// connectStomp runs the go-stomp client over an open WebSocket: CONNECT
// without heart-beats, bounded waits for RECEIPTs, the client's chatter
// silenced. The client is disconnected when the test ends, if the test has
// not done it.
func connectStomp(t *testing.T, ws *websocket.Conn, opts ...func(*stomp.Conn) error) *stomp.Conn {
	t.Helper()
	return stomptest.Connect(t, ws, withQuietLogger(opts)...)
}

// disconnect sends DISCONNECT with a receipt and waits for the RECEIPT,
// which the server sends after handling every frame before it. go-stomp
// closes the WebSocket once the RECEIPT is in; when the server has closed
// it first, that close reports net.ErrClosed, which is no failure.
func disconnect(t *testing.T, c *stomp.Conn) {
	t.Helper()
	if err := c.Disconnect(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("DISCONNECT: %v", err)
	}
}

// quietLogger drops the go-stomp client's debug and info lines (it logs
// each subscription ending when a connection closes) and keeps warnings
// and errors.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)       {}
func (quietLogger) Infof(string, ...any)        {}
func (quietLogger) Warningf(f string, v ...any) { log.Printf("stomp client: "+f, v...) }
func (quietLogger) Errorf(f string, v ...any)   { log.Printf("stomp client: "+f, v...) }
func (quietLogger) Debug(string)                {}
func (quietLogger) Info(string)                 {}
func (quietLogger) Warning(msg string)          { log.Print("stomp client: " + msg) }
func (quietLogger) Error(msg string)            { log.Print("stomp client: " + msg) }

// withQuietLogger returns opts after an option that installs quietLogger.
func withQuietLogger(opts []func(*stomp.Conn) error) []func(*stomp.Conn) error {
	return append([]func(*stomp.Conn) error{stomp.ConnOpt.Logger(quietLogger{})}, opts...)
}

// dialStomp is dialWS then connectStomp; a refused handshake fails the
// test.
func dialStomp(t *testing.T, url string, opts ...func(*stomp.Conn) error) *stomp.Conn {
	t.Helper()
	return stomptest.Dial(t, url, withQuietLogger(opts)...)
}

// describe summarizes a handshake response for failure messages.
func describe(resp *http.Response) string {
	return stomptest.Describe(resp)
}

// subscribe subscribes c to dest and waits until the server has the
// subscription in place (see stomptest.Subscribe).
func subscribe(t *testing.T, c *stomp.Conn, dest string) *stomp.Subscription {
	t.Helper()
	return stomptest.Subscribe(t, c, dest)
}

// nextMessage returns the next message of sub, failing the test after
// clientTimeout or if the subscription ends with an error.
func nextMessage(t *testing.T, sub *stomp.Subscription) *stomp.Message {
	t.Helper()
	return stomptest.Next(t, sub)
}

// samples is a /metrics scrape: every sample by "name{label="value",...}"
// with labels sorted by name, or "name" for a sample without labels.
// Histograms and summaries appear as their _count and _sum.
type samples map[string]float64

// scrape reads base+"/metrics" and parses the text exposition format.
func scrape(t *testing.T, base string) samples {
	t.Helper()
	resp, err := http.Get(adminBase(t, base) + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got status %d, want 200", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := samples{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			labels := labelString(m.GetLabel())
			switch {
			case m.Counter != nil:
				out[name+labels] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name+labels] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[name+labels] = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			case m.Summary != nil:
				out[name+"_count"+labels] = float64(m.GetSummary().GetSampleCount())
				out[name+"_sum"+labels] = m.GetSummary().GetSampleSum()
			}
		}
	}
	return out
}

// labelString renders labels as {a="x",b="y"}, sorted by name; "" for
// none.
func labelString(labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return ""
	}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// sum adds up the samples of metric name whose labels include every one
// of match ("command=\"SEND\"" style pairs); with no match, the samples
// of every label set.
func (s samples) sum(name string, match ...string) float64 {
	var total float64
	for key, v := range s {
		labels, ok := strings.CutPrefix(key, name)
		if !ok || (labels != "" && labels[0] != '{') {
			continue
		}
		all := true
		for _, m := range match {
			if !strings.Contains(labels, m) {
				all = false
				break
			}
		}
		if all {
			total += v
		}
	}
	return total
}

// waitFor polls cond every 10ms until it returns nil, and fails the test
// with cond's last error if that takes longer than timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	poll.Until(t, timeout, cond)
}
