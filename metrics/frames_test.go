package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestCommandIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		command string
		want    string
	}{
		{"CONNECT", "CONNECT"},
		{"STOMP", "STOMP"},
		{"SEND", "SEND"},
		{"SUBSCRIBE", "SUBSCRIBE"},
		{"UNSUBSCRIBE", "UNSUBSCRIBE"},
		{"ACK", "ACK"},
		{"NACK", "NACK"},
		{"BEGIN", "BEGIN"},
		{"COMMIT", "COMMIT"},
		{"ABORT", "ABORT"},
		{"DISCONNECT", "DISCONNECT"},
		{"send", "other"},
		{"MESSAGE", "other"}, // a server frame never arrives inbound
		{"", "other"},
		{"SEND ", "other"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			if got := commandLabels[commandIndex(tt.command)]; got != tt.want {
				t.Errorf("commandIndex(%q) labels %q, want %q", tt.command, got, tt.want)
			}
		})
	}
}

// Every named command maps back to its own label, so the switch and the
// label table cannot drift apart.
func TestCommandLabelsRoundTrip(t *testing.T) {
	t.Parallel()
	for i, l := range commandLabels {
		if i == cmdOther {
			continue
		}
		if got := commandIndex(l); got != i {
			t.Errorf("commandIndex(%q) = %d, want %d", l, got, i)
		}
	}
}

func TestFrameCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})

	// 10 SEND frames: 6 pass, 3 hit the rate limit, 1 is rejected.
	for i := range 10 {
		m.FrameReceived("SEND")
		switch {
		case i < 6:
			m.FramePassed("SEND")
		case i < 9:
			m.FrameDropped("SEND", DropRateLimit)
		default:
			m.FrameDropped("SEND", DropRejected)
		}
	}
	// 2 SUBSCRIBE frames pass; one unknown command is dropped with an
	// out-of-range reason.
	m.FrameReceived("SUBSCRIBE")
	m.FrameReceived("SUBSCRIBE")
	m.FramePassed("SUBSCRIBE")
	m.FramePassed("SUBSCRIBE")
	m.FrameReceived("HELLO")
	m.FrameDropped("HELLO", DropReason(200))

	tests := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"received SEND", "stompgate_frames_received_total", []string{"command", "SEND"}, 10},
		{"passed SEND", "stompgate_frames_passed_total", []string{"command", "SEND"}, 6},
		{"dropped SEND rate_limit", "stompgate_frames_dropped_total", []string{"command", "SEND", "reason", "rate_limit"}, 3},
		{"dropped SEND rejected", "stompgate_frames_dropped_total", []string{"command", "SEND", "reason", "rejected"}, 1},
		{"dropped SEND other", "stompgate_frames_dropped_total", []string{"command", "SEND", "reason", "other"}, 0},
		{"received SUBSCRIBE", "stompgate_frames_received_total", []string{"command", "SUBSCRIBE"}, 2},
		{"passed SUBSCRIBE", "stompgate_frames_passed_total", []string{"command", "SUBSCRIBE"}, 2},
		{"received other", "stompgate_frames_received_total", []string{"command", "other"}, 1},
		{"dropped other other", "stompgate_frames_dropped_total", []string{"command", "other", "reason", "other"}, 1},
		{"received ACK untouched", "stompgate_frames_received_total", []string{"command", "ACK"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sample(t, reg, tt.metric, tt.labels...); got != tt.want {
				t.Errorf("%s{%s} = %v, want %v", tt.metric, labelKey(tt.labels...), got, tt.want)
			}
		})
	}
}

// received = passed + dropped, per command, summed over reasons.
func TestFrameAccountingIdentity(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	commands := []string{"SEND", "SUBSCRIBE", "ACK", "bogus", "DISCONNECT"}
	reasons := []DropReason{DropRateLimit, DropRejected, DropOther}
	for i := range 1000 {
		c := commands[i%len(commands)]
		m.FrameReceived(c)
		if i%3 == 0 {
			m.FrameDropped(c, reasons[i%len(reasons)])
		} else {
			m.FramePassed(c)
		}
	}
	fams := gather(t, reg)
	sums := map[string]map[string]float64{} // family -> command -> total
	for _, name := range []string{"stompgate_frames_received_total", "stompgate_frames_passed_total", "stompgate_frames_dropped_total"} {
		sums[name] = map[string]float64{}
		for _, s := range fams[name].GetMetric() {
			for _, lp := range s.GetLabel() {
				if lp.GetName() == "command" {
					sums[name][lp.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	total := 0.0
	for _, c := range commandLabels {
		r := sums["stompgate_frames_received_total"][c]
		p := sums["stompgate_frames_passed_total"][c]
		d := sums["stompgate_frames_dropped_total"][c]
		if r != p+d {
			t.Errorf("command %s: received %v, want passed %v + dropped %v", c, r, p, d)
		}
		total += r
	}
	if total != 1000 {
		t.Errorf("received over all commands = %v, want 1000", total)
	}
}

func TestProtocolErrorClose(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.ProtocolErrorClose("frame_too_large")
	m.ProtocolErrorClose("frame_too_large")
	m.ProtocolErrorClose("permission")
	m.ProtocolErrorClose("something new")
	m.ProtocolErrorClose("")

	tests := []struct {
		kind string
		want float64
	}{
		{"frame_too_large", 2},
		{"permission", 1},
		{"other", 2},
		{"malformed", 0},
	}
	for _, tt := range tests {
		if got := sample(t, reg, "stompgate_protocol_error_closes_total", "kind", tt.kind); got != tt.want {
			t.Errorf("protocol_error_closes_total{kind=%q} = %v, want %v", tt.kind, got, tt.want)
		}
	}
	for _, k := range outcome.ProtocolErrorKinds() {
		if k == labelOther {
			t.Error(`outcome.ProtocolErrorKinds() lists "other"`)
		}
		if sample(t, reg, "stompgate_protocol_error_closes_total", "kind", k) < 0 {
			t.Errorf("kind %q has no series", k)
		}
	}
}

func TestDropReasonString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r    DropReason
		want string
	}{
		{DropOther, "other"},
		{DropRateLimit, "rate_limit"},
		{DropRejected, "rejected"},
		{DropAborted, "transaction_aborted"},
		{DropReason(99), "other"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("DropReason(%d).String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestDropReasonOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[*outcome.Reason]DropReason{
		outcome.DropRateLimit:                       DropRateLimit,
		outcome.DropAborted:                         DropAborted,
		outcome.RejectPermission:                    DropRejected,
		outcome.NewReject("a stage of my own", nil): DropRejected,
	} {
		if got := DropReasonOf(in); got != want {
			t.Errorf("DropReasonOf(%q) = %v, want %v", in, got, want)
		}
	}
}
