package scrape

import (
	"strings"
	"testing"
)

const metricsPage = `# HELP stompgate_frames_received_total Inbound frames.
# TYPE stompgate_frames_received_total counter
stompgate_frames_received_total{command="CONNECT"} 12
stompgate_frames_received_total{command="SEND"} 1000
stompgate_frames_passed_total{command="CONNECT"} 12
stompgate_frames_passed_total{command="SEND"} 300
stompgate_frames_dropped_total{command="SEND",reason="rate_limit"} 690
stompgate_frames_dropped_total{command="SEND",reason="rejected"} 10
stompgate_frames_dropped_total{command="CONNECT",reason="rate_limit"} 0
process_resident_memory_bytes 2.5e+07
stompgate_handshakes_total{result="accepted"} 6 1700000000000
`

func TestParseSamples(t *testing.T) {
	s, err := parseSamples(strings.NewReader(metricsPage))
	if err != nil {
		t.Fatal(err)
	}
	got := FrameCountsOf(s)
	want := FrameCounts{Received: 1012, Passed: 312, Dropped: 700, SendReceived: 1000, SendPassed: 300, SendDropped: 700}
	if got != want {
		t.Errorf("frameCountsOf = %+v, want %+v", got, want)
	}
	if !got.Balanced() {
		t.Errorf("%+v not balanced, want balanced", got)
	}
	if v := s.Sum(MetricRSS); v != 25e6 {
		t.Errorf("sum(%s) = %v, want 2.5e7", MetricRSS, v)
	}
	if v := s.Sum("stompgate_handshakes_total"); v != 6 {
		t.Errorf("sum with a timestamp = %v, want 6", v)
	}
	// A name that is a prefix of another must not match it.
	if s.Has("stompgate_frames") {
		t.Error(`has("stompgate_frames") = true, want false`)
	}
	unbalanced := FrameCounts{Received: 10, Passed: 5, Dropped: 4, SendReceived: 5, SendPassed: 5}
	if unbalanced.Balanced() {
		t.Errorf("%+v balanced, want not", unbalanced)
	}
	delta := want.Minus(FrameCounts{Received: 12, Passed: 12})
	if delta.Received != 1000 || delta.Passed != 300 || !delta.Balanced() {
		t.Errorf("minus = %+v, want received 1000, passed 300, balanced", delta)
	}
	if _, err := parseSamples(strings.NewReader("broken{a=\"b\" 1\n")); err == nil {
		t.Error("parseSamples(unterminated labels) = nil error, want one")
	}
}
