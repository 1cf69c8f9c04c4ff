package scenario

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// centrifugoStub is a server that speaks the part of Centrifugo's JSON
// protocol the rooms scenario uses: connect, subscribe, publish (pushed
// to every subscriber of the channel), and a ping each connection must
// answer with a pong.
type centrifugoStub struct {
	mu   sync.Mutex
	subs map[string][]*websocket.Conn // guarded by mu: channel → subscribers

	pongs      atomic.Int64 // pongs received
	publishes  atomic.Int64 // publish commands received
	badCommand atomic.Int64 // lines that are not a command it knows
}

type stubCommand struct {
	ID        uint32    `json:"id"`
	Connect   *struct{} `json:"connect"`
	Subscribe *struct {
		Channel string `json:"channel"`
	} `json:"subscribe"`
	Publish *struct {
		Channel string          `json:"channel"`
		Data    json.RawMessage `json:"data"`
	} `json:"publish"`
}

func (s *centrifugoStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	write := func(b []byte) { _ = c.Write(ctx, websocket.MessageText, b) }
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(msg), "\n") {
			if line == "{}" {
				s.pongs.Add(1)
				continue
			}
			var cmd stubCommand
			if err := json.Unmarshal([]byte(line), &cmd); err != nil || cmd.ID == 0 {
				s.badCommand.Add(1)
				continue
			}
			switch {
			case cmd.Connect != nil:
				write([]byte(`{"id":` + itoa(cmd.ID) + `,"connect":{"client":"x","ping":25,"pong":true}}`))
				// A ping right away, so that every session answers one.
				write([]byte(`{}`))
			case cmd.Subscribe != nil:
				s.mu.Lock()
				s.subs[cmd.Subscribe.Channel] = append(s.subs[cmd.Subscribe.Channel], c)
				s.mu.Unlock()
				write([]byte(`{"id":` + itoa(cmd.ID) + `,"subscribe":{}}`))
			case cmd.Publish != nil:
				s.publishes.Add(1)
				push := []byte(`{"push":{"channel":"` + cmd.Publish.Channel + `","pub":{"data":` + string(cmd.Publish.Data) + `}}}`)
				s.mu.Lock()
				subs := append([]*websocket.Conn(nil), s.subs[cmd.Publish.Channel]...)
				s.mu.Unlock()
				write([]byte(`{"id":` + itoa(cmd.ID) + `,"publish":{}}`))
				for _, sc := range subs {
					wctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_ = sc.Write(wctx, websocket.MessageText, push)
					cancel()
				}
			default:
				s.badCommand.Add(1)
			}
		}
	}
}

func itoa(v uint32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRoomsCentrifugoProtocol runs rooms with -protocol centrifugo
// against a server that speaks the protocol: every publication reaches
// every player of its room, every session answered its ping, and the
// latencies are split as over STOMP.
func TestRoomsCentrifugoProtocol(t *testing.T) {
	stub := &centrifugoStub{subs: map[string][]*websocket.Conn{}}
	ts := httptest.NewServer(stub)
	t.Cleanup(ts.Close)
	url := "ws" + strings.TrimPrefix(ts.URL, "http") + "/connection/websocket"
	c := testCommon(url, 2*time.Second)
	c.MetricsURL = "off"
	cfg := roomsConfig{Common: c, sessions: 12, roomSize: 4, rate: 5, size: 64, body: "pad",
		measure: roomsMeasure{protocol: "centrifugo", kernelStamps: true}}
	rep, err := rooms(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Rooms
	if rr.Sent == 0 || rr.Delivered != rr.Expected || rr.Expected != rr.Sent*4 || rr.Errors != 0 {
		t.Errorf("sent %d, expected %d, delivered %d, %d errors; want every publication to its 4 players, no error",
			rr.Sent, rr.Expected, rr.Delivered, rr.Errors)
	}
	if got := stub.publishes.Load(); got != rr.Sent {
		t.Errorf("server received %d publishes, the tool sent %d", got, rr.Sent)
	}
	if got := stub.pongs.Load(); got != 12 {
		t.Errorf("%d pongs, want one per session (12)", got)
	}
	if got := stub.badCommand.Load(); got != 0 {
		t.Errorf("%d lines the server could not read", got)
	}
	if rr.Latency == nil || rr.Latency.Count != rr.Sent || rr.Protocol != "centrifugo" {
		t.Errorf("latency %+v, protocol %q; want one sample per publication (%d), centrifugo", rr.Latency, rr.Protocol, rr.Sent)
	}
}
