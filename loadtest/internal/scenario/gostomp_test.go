package scenario

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	stompserver "github.com/go-stomp/stomp/v3/server"
)

// wsListener is a net.Listener whose connections are WebSocket sessions
// accepted by an HTTP handler, each seen as a byte stream
// (websocket.NetConn, text messages). It puts go-stomp's TCP server
// behind WebSocket, so the tool is checked against a STOMP server nobody
// here wrote.
type wsListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newWSListener() *wsListener {
	return &wsListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *wsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *wsListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *wsListener) Addr() net.Addr { return l.addr }

// ServeHTTP upgrades the request and hands the stream to Accept.
func (l *wsListener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v12.stomp", "v11.stomp"}})
	if err != nil {
		return
	}
	// The connection outlives this handler: its context must not be the
	// request's.
	nc := websocket.NetConn(context.Background(), c, websocket.MessageText)
	select {
	case l.conns <- nc:
	case <-l.done:
		nc.Close()
	}
}

// nopLogger silences go-stomp's server.
type nopLogger struct{}

func (nopLogger) Debugf(string, ...interface{})   {}
func (nopLogger) Infof(string, ...interface{})    {}
func (nopLogger) Warningf(string, ...interface{}) {}
func (nopLogger) Errorf(string, ...interface{})   {}
func (nopLogger) Debug(string)                    {}
func (nopLogger) Info(string)                     {}
func (nopLogger) Warning(string)                  {}
func (nopLogger) Error(string)                    {}

// startGoStomp serves go-stomp's server over WebSocket on loopback and
// returns the ws URL. Its request loop has no shutdown (see TestMain).
func startGoStomp(t *testing.T) string {
	t.Helper()
	l := newWSListener()
	ts := httptest.NewServer(l)
	l.addr = ts.Listener.Addr()
	go func() { _ = (&stompserver.Server{Log: nopLogger{}}).Serve(l) }()
	t.Cleanup(func() {
		l.Close()
		ts.Close()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
}

func TestFloodAgainstGoStomp(t *testing.T) {
	url := startGoStomp(t)
	cfg := floodConfig{
		Common: testCommon(url, 2*time.Second),
		normal: 8, normalRate: 3,
		abusers: 2, abuserRate: 100,
		roomSize: 4,
	}
	rep, err := flood(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// No limit: every message reaches its room's one observer.
	for _, name := range []string{"normal", "abuser"} {
		c := classNamed(t, rep, name)
		if c.Sent == 0 || c.Delivered != c.Sent || c.DeliveryRatio != 1 || c.Errors != 0 {
			t.Errorf("%s: sent %d, delivered %d, ratio %v, errors %d; want all delivered", name, c.Sent, c.Delivered, c.DeliveryRatio, c.Errors)
		}
	}
	if a := classNamed(t, rep, "abuser"); a.Sent < 300 {
		t.Errorf("abusers sent %d, want ≥ 300 (2 × 100/s × 2s, less start-up)", a.Sent)
	}
	if srv := rep.Server; srv == nil || srv.MetricsAvailable || srv.MetricsNote == "" {
		t.Errorf("server report %+v, want metrics unavailable with a note", srv)
	}
}

func TestThroughputAgainstGoStomp(t *testing.T) {
	url := startGoStomp(t)
	for _, tt := range []struct {
		name string
		rate float64
	}{
		{"paced", 100},
		{"unpaced", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := throughputConfig{
				Common:     testCommon(url, 2*time.Second),
				publishers: 3, subscribers: 2, size: 100, rate: tt.rate, window: 64,
			}
			cfg.TopicPrefix = "/topic/" + tt.name + "."
			rep, err := throughput(t.Context(), &cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := classNamed(t, rep, "throughput")
			if c.Sent == 0 || c.Delivered != c.Sent*2 || c.Errors != 0 {
				t.Errorf("sent %d, delivered %d, errors %d; want delivered = sent × 2 subscribers", c.Sent, c.Delivered, c.Errors)
			}
			if c.Latency == nil || c.Latency.Count != c.Delivered {
				t.Errorf("latency %+v, want one sample per delivery (%d)", c.Latency, c.Delivered)
			}
		})
	}
}
