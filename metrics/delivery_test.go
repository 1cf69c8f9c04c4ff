package metrics

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

func TestDelivered(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{DestinationPrefixes: []string{"/topic/", "/topic/room.", "/queue/"}})
	m.Delivered("/topic/room.42", 9) // longest prefix wins
	m.Delivered("/topic/lobby", 3)   // shorter prefix
	m.Delivered("/queue/jobs", 1)
	m.Delivered("/exchange/x", 5)     // no prefix
	m.Delivered("/topic/room.42", 0)  // nobody subscribed: nothing
	m.Delivered("/topic/room.42", -4) // nonsense: nothing, no panic
	m.Delivered("", 2)                // empty destination: other
	m.Delivered("/topic/room.", 1)    // exactly the prefix
	m.Delivered("/TOPIC/room.1", 1)   // case-sensitive: other
	m.SlowConsumerDisconnect()

	tests := []struct {
		prefix string
		want   float64
	}{
		{"/topic/room.", 10},
		{"/topic/", 3},
		{"/queue/", 1},
		{"other", 8},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			t.Parallel()
			if got := sample(t, reg, "stompgate_messages_delivered_total", "destination_prefix", tt.prefix); got != tt.want {
				t.Errorf("delivered{destination_prefix=%q} = %v, want %v", tt.prefix, got, tt.want)
			}
		})
	}
	if got := sample(t, reg, "stompgate_slow_consumer_disconnects_total"); got != 1 {
		t.Errorf("slow_consumer_disconnects_total = %v, want 1", got)
	}
}

func TestDeliveredNoPrefixes(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.Delivered("/topic/a", 2)
	m.Delivered("/queue/b", 3)
	if got := sample(t, reg, "stompgate_messages_delivered_total", "destination_prefix", "other"); got != 5 {
		t.Errorf(`delivered{destination_prefix="other"} = %v, want 5`, got)
	}
	if n := len(gather(t, reg)["stompgate_messages_delivered_total"].GetMetric()); n != 1 {
		t.Errorf("delivered has %d series, want 1", n)
	}
}

// No input can create a series: a flood of random destinations, commands,
// kinds, stores and out-of-range enum values leaves the series count where
// New put it.
func TestBoundedCardinality(t *testing.T) {
	t.Parallel()
	prefixes := []string{"/topic/room.", "/topic/chat."}
	m, reg := newTestMetrics(t, Config{DestinationPrefixes: prefixes})

	// The series New creates: one per label value of every metric.
	want := 1 + 1 + 1 + len(outcome.Closes()) + 1 + 1 + 1 + 1 + // sessions active, opened, compressed, closed (+ other), panics, reader pauses, heart-beats capped
		len(outcome.Handshakes()) + 1 + len(storeLabels) + len(storeLabels) + 1 + // handshakes, decision, store errors, fallback
		len(localLabels) + // decisions made without Redis
		numConfirmResults + numConfirmResults + 1 + // handshake and session cap confirmations, session cap local decisions
		numCommands*(2+numDropReasons) + len(outcome.ProtocolErrorKinds()) + 1 + // frames, protocol errors
		len(prefixes) + 1 + 1 + // delivered, slow consumers
		len(relayDirectionLabels) + len(relayDropReasonLabels) + 1 + 1 + // relay messages, dropped, outage, subscriptions
		len(capScopeLabels) + len(capScopeLabels) + 1 + 1 + 1 + // session cap leases, displaced, store errors, restored, fallback
		len(reconnectScopeLabels)*len(reconnectStoreLabels) + len(reconnectScopeLabels) + 1 + 1 + // reconnect connects, bans, store errors, fallback
		len(httpTimeoutLabels) + // HTTP timeouts
		len(prefixLimitLabels) + // IPv6 prefix refusals
		1 + len(relayResubscribeReasonLabels) + // relay subscriptions down, resubscribes
		1 + // build info
		3 + 1 + // input pauses by budget (+ other), paused seconds
		len(relayDropReasonLabels) + // relay disconnect requests dropped
		len(procsReasonLabels) + // processor changes
		len(apiEndpointLabels)*(len(apiCodes)+1) + len(appResultLabels) + 1 + // API requests, app messages, user deliveries
		len(appBoundLabels) + // app backlog refusals
		2*len(principalLimitSourceLabels) + 1 + 1 + 1 + 1 + numConfirmResults + // principal limit decisions, round trips, store errors, evictions, fallback, confirmations
		3*2 + len(reloadResultLabels) + // rule drops, latest-value replacements and subscriber cap refusals (default, other each), policy reloads
		len(admissionReasonLabels) + 1 + // admission refusals, admissions
		len(listenerReasonLabels) + 1 + // listener refusals, evictions
		len(presenceOpLabels) + len(presenceFrameLabels) + len(presenceRefusalLabels) + 3 + // presence events, frames, refusals, truncated, store errors, dropped
		len(deliveryPathLabels) + 1 // delivery latency by path (+ other), outbound queue wait
	if got := seriesCount(t, reg); got != want {
		t.Fatalf("series after New = %d, want %d", got, want)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteByte(byte(' ' + rng.IntN(95)))
		}
		return b.String()
	}
	for i := range 10_000 {
		dest := word()
		switch i % 3 {
		case 0:
			dest = prefixes[0] + dest
		case 1:
			dest = "/topic/" + dest
		}
		m.Delivered(dest, 1+rng.IntN(9))
		m.FrameReceived(word())
		m.FramePassed(word())
		m.FrameDropped(word(), DropReason(rng.IntN(256)))
		m.ProtocolErrorClose(word())
		m.LimiterDecision(word(), time.Duration(rng.Int64N(int64(time.Second))))
		m.LimiterStoreError(word())
		m.Handshake(&outcome.Handshake{})
		m.SessionOpened()
		m.SessionClosed(&outcome.Close{})
		m.RelayMessages(RelayDirection(rng.IntN(256)), 1)
		m.RelayDropped(RelayDropReason(rng.IntN(256)), 1)
		m.APIRequest(word(), rng.IntN(1000))
		m.AppHandled(word())
		m.PrincipalLimitDecision(rng.IntN(2) == 0, word())
		m.LatestReplaced(word())
		m.SubscriberCapRefused(word())
		m.MessageWritten(word(), time.Duration(rng.Int64N(int64(time.Second))), 0)
	}
	if got := seriesCount(t, reg); got != want {
		t.Errorf("series after 10,000 random inputs = %d, want %d", got, want)
	}
	for _, mf := range gather(t, reg) {
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				if lp.GetName() == "destination_prefix" && lp.GetValue() != "other" && !slices.Contains(prefixes, lp.GetValue()) {
					t.Errorf("destination_prefix %q is not a configured prefix", lp.GetValue())
				}
			}
		}
	}
	if got := sample(t, reg, "stompgate_sessions_active"); got != 0 {
		t.Errorf("sessions_active after balanced open/close = %v, want 0", got)
	}
	if got := sample(t, reg, "stompgate_frames_received_total", "command", "other"); got != 10_000 {
		t.Errorf(`received{command="other"} = %v, want 10000`, got)
	}
}

// Concurrent callers lose no increments (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{DestinationPrefixes: []string{"/topic/"}})
	const workers, perWorker = 8, 1000
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range perWorker {
				m.FrameReceived("SEND")
				m.FramePassed("SEND")
				m.Delivered(fmt.Sprintf("/topic/%d", w), 2)
				m.LimiterDecision("memory", time.Duration(i))
			}
		}()
	}
	for range workers {
		<-done
	}
	if got := sample(t, reg, "stompgate_frames_received_total", "command", "SEND"); got != workers*perWorker {
		t.Errorf("received{SEND} = %v, want %d", got, workers*perWorker)
	}
	if got := sample(t, reg, "stompgate_messages_delivered_total", "destination_prefix", "/topic/"); got != 2*workers*perWorker {
		t.Errorf(`delivered{"/topic/"} = %v, want %d`, got, 2*workers*perWorker)
	}
	if got := sample(t, reg, "stompgate_handshake_limiter_decision_seconds", "store", "memory"); got != workers*perWorker {
		t.Errorf(`decision_seconds_count{store="memory"} = %v, want %d`, got, workers*perWorker)
	}
}
