package metrics_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
)

// A server builds one Metrics on its registry and reports what happens to
// each handshake, session and frame. Destinations are labelled by
// configured prefix only, so a room per game never becomes a series per
// room.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{
		DestinationPrefixes: []string{"/topic/room."},
		Build:               metrics.BuildInfo{Version: "v0.1.0", Revision: "3fdcbc7", GoVersion: "go1.26.8"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	m.Handshake(outcome.HandshakeAccepted)
	m.SessionOpened()
	// Three SEND frames arrive; the session limiter drops the third.
	for i := range 3 {
		m.FrameReceived("SEND")
		if i < 2 {
			m.FramePassed("SEND")
		} else {
			m.FrameDropped("SEND", metrics.DropRateLimit)
		}
	}
	m.Delivered("/topic/room.8f3a", 9) // queued to 9 subscribers
	m.Delivered("/queue/private", 1)   // matches no prefix
	m.SessionClosed(outcome.CloseNormal)
	m.LimiterDecision("redis", 400*time.Microsecond)

	// A second Metrics on the same registry is refused with an error.
	if _, err := metrics.New(reg, metrics.Config{}); err != nil {
		fmt.Println(err)
	}

	printNonZero(reg)
	// Output:
	// metrics: register stompgate_sessions_active: duplicate metrics collector registration attempted
	// stompgate_build_info{goversion="go1.26.8",revision="3fdcbc7",version="v0.1.0"} 1
	// stompgate_frames_dropped_total{command="SEND",reason="rate_limit"} 1
	// stompgate_frames_passed_total{command="SEND"} 2
	// stompgate_frames_received_total{command="SEND"} 3
	// stompgate_handshakes_total{result="accepted"} 1
	// stompgate_messages_delivered_total{destination_prefix="/topic/room."} 9
	// stompgate_messages_delivered_total{destination_prefix="other"} 1
	// stompgate_sessions_closed_total{reason="normal"} 1
	// stompgate_sessions_opened_total 1
}

// printNonZero prints every counter and gauge series that is not zero, in
// the registry's sorted order.
func printNonZero(g prometheus.Gatherer) {
	mfs, err := g.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			v := s.GetCounter().GetValue() + s.GetGauge().GetValue()
			if v == 0 {
				continue
			}
			var labels []string
			for _, lp := range s.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			fmt.Println(name, v)
		}
	}
}
