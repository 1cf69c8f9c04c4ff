package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// The observer is called per frame by the interceptor chain and per
// message by the server and the relay; through their interfaces, as they
// call it, it must not allocate.
func TestObserverAllocations(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{DestinationPrefixes: []string{"/topic/"}})
	if err != nil {
		t.Fatal(err)
	}
	var (
		chain interceptor.Observer = observer{m}
		srv   server.Observer      = observer{m}
		rel   relay.Observer       = observer{m}
	)
	tests := []struct {
		name string
		f    func()
	}{
		{"FrameReceived", func() { chain.FrameReceived("SEND") }},
		{"FramePassed", func() { chain.FramePassed("SEND") }},
		{"FrameDropped", func() { chain.FrameDropped("SEND", outcome.DropRateLimit) }},
		{"Delivered", func() { srv.Delivered("/topic/a", 2) }},
		{"RelayMessages", func() { rel.RelayMessages(relay.DirectionIn, 1) }},
		{"RelayDropped", func() { rel.RelayDropped(relay.DropQueueFull, 1) }},
		{"relay Delivered", func() { rel.Delivered("/topic/a", 1) }},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(100, tt.f); got != 0 {
			t.Errorf("%s: %v allocs per call, want 0", tt.name, got)
		}
	}
}

// Each relay label the relay reports reaches its own series, not "other".
func TestObserverRelayLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o := observer{m}
	for _, d := range []string{relay.DirectionOut, relay.DirectionIn} {
		o.RelayMessages(d, 1)
	}
	for _, r := range []string{relay.DropQueueFull, relay.DropRedisError, relay.DropMalformed,
		relay.DropTooLarge, relay.DropUnsigned, relay.DropBadSignature, relay.DropStale} {
		o.RelayDropped(r, 1)
	}
	for _, r := range []string{relay.ResubscribeMoved, relay.ResubscribeConnection, relay.ResubscribeUnanswered} {
		o.RelayResubscribes(r, 1)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "stompgate_relay_messages_total", "stompgate_relay_dropped_total", "stompgate_relay_resubscribes_total":
		default:
			continue
		}
		for _, s := range mf.GetMetric() {
			label := s.GetLabel()[0].GetValue()
			want := 1.0
			if label == "other" {
				want = 0
			}
			if got := s.GetCounter().GetValue(); got != want {
				t.Errorf("%s{%q} = %v, want %v", mf.GetName(), label, got, want)
			}
			seen++
		}
	}
	if want := 2 + 7 + 3 + 3; seen != want { // the labels above, and "other" once per metric
		t.Errorf("saw %d relay series, want %d", seen, want)
	}
}
