package load

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// TestCentrifugoPublisherFrames: a Centrifugo publisher's message is one
// publish command per line, ids counting from the first publish id, data
// a JSON string that starts with the stamp and is the body's size.
func TestCentrifugoPublisherFrames(t *testing.T) {
	p := NewPublisher(&client.Conn{Proto: client.Centrifugo}, &Class{}, 7, "room:4", 100)
	var b []byte
	for i := range int64(3) {
		b = p.appendHead(b, i)
		b = appendStamp(b, 12345, p.idx)
		b = append(b, p.pad...)
		b = p.appendTail(b)
	}
	lines := bytes.Split(b, []byte{'\n'})
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), b)
	}
	for i, l := range lines {
		var cmd struct {
			ID      uint64 `json:"id"`
			Publish struct {
				Channel string `json:"channel"`
				Data    string `json:"data"`
			} `json:"publish"`
		}
		if err := json.Unmarshal(l, &cmd); err != nil {
			t.Fatalf("line %d %s: %v", i, l, err)
		}
		if cmd.ID != client.CentrifugoFirstPublishID+uint64(i) || cmd.Publish.Channel != "room:4" || len(cmd.Publish.Data) != 100 {
			t.Errorf("line %d: %+v; want id %d, channel room:4, 100 bytes of data", i, cmd, client.CentrifugoFirstPublishID+i)
		}
		ns, pub, ok := parseStamp([]byte(cmd.Publish.Data))
		if !ok || ns != 12345 || pub != 7 {
			t.Errorf("line %d: stamp %d from %d (%v), want 12345 from 7", i, ns, pub, ok)
		}
		if len(l)+1 > p.frameLen()+len("\n") {
			t.Errorf("line %d is %d bytes, above the %d frameLen allows", i, len(l), p.frameLen())
		}
	}
}

// TestSplitLatency: the parts add up to the latency and stay in [0,
// latency], clamped when the kernel time is outside it.
func TestSplitLatency(t *testing.T) {
	t0 := mustTime(t, "2026-11-27T05:00:00Z")
	const ms = 1_000_000
	for _, tc := range []struct {
		name               string
		total              int64
		kernelBefore       int64 // ns before the read
		ok                 bool
		server, tool       int64
		split, wantClamped bool
	}{
		{"arrival 2 ms before a 5 ms read", 5 * ms, 2 * ms, true, 3 * ms, 2 * ms, true, false},
		{"read at arrival", 5 * ms, 0, true, 5 * ms, 0, true, false},
		{"arrival after the read (clock step)", 5 * ms, -ms, true, 5 * ms, 0, true, true},
		{"arrival before the stamp (clock step)", 5 * ms, 9 * ms, true, 0, 5 * ms, true, true},
		{"no kernel time", 5 * ms, 0, false, 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clamped := SplitLatency(dur(tc.total), t0, t0.Add(-dur(tc.kernelBefore)), tc.ok)
			if s.Split != tc.split || clamped != tc.wantClamped || s.Server != dur(tc.server) || s.Tool != dur(tc.tool) || s.Total != dur(tc.total) {
				t.Errorf("SplitLatency = %+v (clamped %v), want server %v tool %v split %v clamped %v",
					s, clamped, dur(tc.server), dur(tc.tool), tc.split, tc.wantClamped)
			}
			if s.Split && s.Server+s.Tool != s.Total {
				t.Errorf("server %v + tool %v != total %v", s.Server, s.Tool, s.Total)
			}
		})
	}
}
