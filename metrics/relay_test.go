package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/internal/procs"
	"github.com/stompgate/stompgate/relay"
)

func TestRelayCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.RelayMessages(RelayOut, 5)
	m.RelayMessages(RelayIn, 3)
	m.RelayMessages(RelayIn, 0)
	m.RelayMessages(RelayIn, -2)
	m.RelayMessages(RelayDirection(42), 1)
	m.RelayDropped(RelayDropQueueFull, 2)
	m.RelayDropped(RelayDropRedisError, 7)
	m.RelayDropped(RelayDropReason(42), 1)
	m.RelayDropped(RelayDropTooLarge, 1)
	m.RelayDisconnectDropped(RelayDropBadSignature, 3)
	m.RelayDisconnectDropped(RelayDropUnsigned, -1)
	m.RelayResubscribes(RelayResubscribeMoved, 4)
	m.RelayResubscribes(RelayResubscribeUnanswered, 1)
	m.RelayResubscribes(RelayResubscribeConnection, 0)
	m.RelayResubscribes(RelayResubscribeReason(42), 2)

	tests := []struct {
		name, label, value string
		want               float64
	}{
		{"stompgate_relay_messages_total", "direction", "out", 5},
		{"stompgate_relay_messages_total", "direction", "in", 3},
		{"stompgate_relay_messages_total", "direction", "other", 1},
		{"stompgate_relay_dropped_total", "reason", "queue_full", 2},
		{"stompgate_relay_dropped_total", "reason", "redis_error", 7},
		{"stompgate_relay_dropped_total", "reason", "malformed", 0},
		{"stompgate_relay_dropped_total", "reason", "other", 1},
		{"stompgate_relay_dropped_total", "reason", "too_large", 1},
		{"stompgate_relay_disconnect_dropped_total", "reason", "bad_signature", 3},
		{"stompgate_relay_disconnect_dropped_total", "reason", "unsigned", 0},
		{"stompgate_relay_resubscribes_total", "reason", "moved", 4},
		{"stompgate_relay_resubscribes_total", "reason", "connection", 0},
		{"stompgate_relay_resubscribes_total", "reason", "unanswered", 1},
		{"stompgate_relay_resubscribes_total", "reason", "other", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.value, func(t *testing.T) {
			t.Parallel()
			if got := sample(t, reg, tt.name, tt.label, tt.value); got != tt.want {
				t.Errorf("%s{%s=%q} = %v, want %v", tt.name, tt.label, tt.value, got, tt.want)
			}
		})
	}
}

func TestRelayGauges(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	if got := sample(t, reg, "stompgate_relay_outage"); got != 0 {
		t.Errorf("relay_outage before any event = %v, want 0", got)
	}
	m.SetRelayOutage(true)
	if got := sample(t, reg, "stompgate_relay_outage"); got != 1 {
		t.Errorf("relay_outage after SetRelayOutage(true) = %v, want 1", got)
	}
	m.SetRelayOutage(false)
	if got := sample(t, reg, "stompgate_relay_outage"); got != 0 {
		t.Errorf("relay_outage after SetRelayOutage(false) = %v, want 0", got)
	}
	m.SetRelaySubscriptions(12)
	if got := sample(t, reg, "stompgate_relay_subscriptions"); got != 12 {
		t.Errorf("relay_subscriptions = %v, want 12", got)
	}
	m.SetRelaySubscriptionsDown(3)
	if got := sample(t, reg, "stompgate_relay_subscriptions_down"); got != 3 {
		t.Errorf("relay_subscriptions_down = %v, want 3", got)
	}
}

func TestRelayLabelStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
	}{
		{RelayOut.String(), "out"},
		{RelayIn.String(), "in"},
		{RelayOther.String(), "other"},
		{RelayDirection(200).String(), "other"},
		{RelayDropQueueFull.String(), "queue_full"},
		{RelayDropRedisError.String(), "redis_error"},
		{RelayDropMalformed.String(), "malformed"},
		{RelayDropReason(200).String(), "other"},
		{RelayResubscribeMoved.String(), "moved"},
		{RelayResubscribeConnection.String(), "connection"},
		{RelayResubscribeUnanswered.String(), "unanswered"},
		{RelayResubscribeReason(200).String(), "other"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestRelayNilMetrics(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.RelayMessages(RelayOut, 1)
	m.RelayDropped(RelayDropQueueFull, 1)
	m.RelayDisconnectDropped(RelayDropStale, 1)
	m.SetRelayOutage(true)
	m.SetRelaySubscriptions(1)
}

// TestRelayLabelsAreTheRelays checks that each relay label is the relay
// package's own name for it, read back through the *Of mappings.
func TestRelayLabelsAreTheRelays(t *testing.T) {
	t.Parallel()
	for _, d := range []string{relay.DirectionOut, relay.DirectionIn} {
		if got := RelayDirectionOf(d).String(); got != d {
			t.Errorf("RelayDirectionOf(%q).String() = %q", d, got)
		}
	}
	for _, r := range []string{relay.DropQueueFull, relay.DropRedisError, relay.DropMalformed,
		relay.DropTooLarge, relay.DropUnsigned, relay.DropBadSignature, relay.DropStale} {
		if got := RelayDropReasonOf(r).String(); got != r {
			t.Errorf("RelayDropReasonOf(%q).String() = %q", r, got)
		}
	}
	for _, r := range []string{relay.ResubscribeMoved, relay.ResubscribeConnection, relay.ResubscribeUnanswered} {
		if got := RelayResubscribeReasonOf(r).String(); got != r {
			t.Errorf("RelayResubscribeReasonOf(%q).String() = %q", r, got)
		}
	}
	if RelayDirectionOf("sideways") != RelayOther || RelayDropReasonOf("?") != RelayDropOther || RelayResubscribeReasonOf("?") != RelayResubscribeOther {
		t.Errorf("an unknown label is not other")
	}
}

// TestProcsLabelsAreProcs checks that each processor-change label is
// internal/procs' own name for it.
func TestProcsLabelsAreProcs(t *testing.T) {
	t.Parallel()
	for _, r := range []string{procs.ReasonLoad, procs.ReasonQueue, procs.ReasonLower} {
		if got := ProcsReasonOf(r).String(); got != r {
			t.Errorf("ProcsReasonOf(%q).String() = %q", r, got)
		}
	}
	if ProcsReasonOf("?") != ProcsOther {
		t.Errorf("an unknown reason is not other")
	}
	m, reg := newTestMetrics(t, Config{})
	m.ProcsChanged(ProcsQueue)
	m.ProcsChanged(ProcsReason(99))
	var nilM *Metrics
	nilM.ProcsChanged(ProcsLoad)
	if got := sample(t, reg, "stompgate_procs_changes_total", "reason", "queue"); got != 1 {
		t.Errorf("procs_changes_total{queue} = %v, want 1", got)
	}
	if got := sample(t, reg, "stompgate_procs_changes_total", "reason", "other"); got != 1 {
		t.Errorf("procs_changes_total{other} = %v, want 1", got)
	}
}
