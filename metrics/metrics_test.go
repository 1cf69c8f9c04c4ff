package metrics

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stompgate/stompgate/outcome"
)

func TestNewConfig(t *testing.T) {
	t.Parallel()
	tooMany := make([]string, MaxDestinationPrefixes+1)
	for i := range tooMany {
		tooMany[i] = "/topic/" + strings.Repeat("x", i+1)
	}
	tests := []struct {
		name     string
		prefixes []string
		wantErr  string // empty: New must succeed
	}{
		{name: "zero value", prefixes: nil},
		{name: "two prefixes", prefixes: []string{"/topic/room.", "/queue/"}},
		{name: "maximum", prefixes: tooMany[:MaxDestinationPrefixes]},
		{name: "too many", prefixes: tooMany,
			wantErr: "metrics: DestinationPrefixes has 51 entries, more than the maximum 50"},
		{name: "empty prefix", prefixes: []string{"/topic/", ""},
			wantErr: "metrics: DestinationPrefixes[1] is empty"},
		{name: "duplicate", prefixes: []string{"/topic/", "/queue/", "/topic/"},
			wantErr: `metrics: DestinationPrefixes[2] "/topic/" repeats DestinationPrefixes[0]`},
		{name: "invalid UTF-8", prefixes: []string{"/topic/\xff"},
			wantErr: `metrics: DestinationPrefixes[0] "/topic/\xff" is not valid UTF-8`},
		{name: "reserved", prefixes: []string{"other"},
			wantErr: `metrics: DestinationPrefixes[0] "other" is reserved for destinations that match no prefix`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			m, err := New(reg, Config{DestinationPrefixes: tt.prefixes})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v, want nil", err)
				}
				if m == nil {
					t.Fatal("New returned nil Metrics and nil error")
				}
				return
			}
			if err == nil {
				t.Fatalf("New: nil error, want %q", tt.wantErr)
			}
			if got := err.Error(); got != tt.wantErr {
				t.Errorf("New: error %q, want %q", got, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
			}
			if m != nil {
				t.Errorf("New returned a Metrics with error %v", err)
			}
			if n := seriesCount(t, reg); n != 0 {
				t.Errorf("registry holds %d series after a failed New, want 0", n)
			}
		})
	}
}

func TestNewDoesNotKeepCallerSlice(t *testing.T) {
	t.Parallel()
	prefixes := []string{"/a/", "/a/b/"}
	m, reg := newTestMetrics(t, Config{DestinationPrefixes: prefixes})
	prefixes[0], prefixes[1] = "/x/", "/y/"
	m.Delivered("/a/b/c", 1)
	if got := sample(t, reg, "stompgate_messages_delivered_total", "destination_prefix", "/a/b/"); got != 1 {
		t.Errorf(`delivered{destination_prefix="/a/b/"} = %v, want 1`, got)
	}
}

func TestNewTwiceOnOneRegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	first, err := New(reg, Config{})
	if err != nil {
		t.Fatalf("first New: %v", err)
	}
	before := seriesCount(t, reg)

	second, err := New(reg, Config{})
	if err == nil {
		t.Fatal("second New on the same registry: nil error, want a duplicate registration error")
	}
	if second != nil {
		t.Error("second New returned a Metrics along with its error")
	}
	if !errors.Is(err, ErrRegister) {
		t.Errorf("errors.Is(%v, ErrRegister) = false, want true", err)
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Errorf("errors.As(%v, *AlreadyRegisteredError) = false, want true", err)
	}
	const wantPrefix = "metrics: register stompgate_sessions_active: "
	if got := err.Error(); !strings.HasPrefix(got, wantPrefix) {
		t.Errorf("error %q, want prefix %q", got, wantPrefix)
	}

	// The first Metrics still works and the registry is unchanged.
	first.SessionOpened()
	if got := sample(t, reg, "stompgate_sessions_active"); got != 1 {
		t.Errorf("sessions_active after the failed New = %v, want 1", got)
	}
	if after := seriesCount(t, reg); after != before {
		t.Errorf("registry has %d series after the failed New, want %d", after, before)
	}
}

// A registry that already holds one of the names, but not the first one New
// registers, makes New fail half way: everything it registered before the
// clash must be gone again.
func TestNewRollsBackOnPartialFailure(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	clash := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stompgate_slow_consumer_disconnects_total", Help: "clash",
	})
	reg.MustRegister(clash)
	_, err := New(reg, Config{})
	if !errors.Is(err, ErrRegister) {
		t.Fatalf("New: %v, want an error matching ErrRegister", err)
	}
	if got, want := err.Error(), "metrics: register stompgate_slow_consumer_disconnects_total: "; !strings.HasPrefix(got, want) {
		t.Errorf("error %q, want prefix %q", got, want)
	}
	fams := gather(t, reg)
	if len(fams) != 1 {
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		t.Errorf("registry holds %v after a failed New, want only the clashing counter", names)
	}
}

func TestNewOnFreshRegistries(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		m, reg := newTestMetrics(t, Config{})
		m.SessionOpened()
		if got := testutil.ToFloat64(m.sessionsOpened); got != 1 {
			t.Errorf("registry %d: sessions_opened_total = %v, want 1", i, got)
		}
		if got := sample(t, reg, "stompgate_sessions_opened_total"); got != 1 {
			t.Errorf("registry %d: gathered sessions_opened_total = %v, want 1", i, got)
		}
	}
}

func TestNewNilRegisterer(t *testing.T) {
	t.Parallel()
	m, err := New(nil, Config{})
	if err != nil {
		t.Fatalf("New(nil): %v", err)
	}
	m.FrameReceived("SEND")
	m.FrameReceived("SEND")
	if got := testutil.ToFloat64(m.framesReceived[cmdSend]); got != 2 {
		t.Errorf("received{SEND} = %v, want 2", got)
	}
	// Nothing was registered anywhere, so a second New(nil) works too.
	if _, err := New(nil, Config{}); err != nil {
		t.Errorf("second New(nil): %v", err)
	}
}

// Every method on a nil *Metrics is a no-op, not a panic.
func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.SessionOpened()
	m.SessionClosed(outcome.CloseNormal)
	m.Panic()
	m.Handshake(outcome.HandshakeAccepted)
	m.LimiterDecision("redis", 1)
	m.LimiterStoreError("redis")
	m.SetLimiterFallback(true)
	m.FrameReceived("SEND")
	m.FramePassed("SEND")
	m.FrameDropped("SEND", DropRateLimit)
	m.ProtocolErrorClose("malformed")
	m.Delivered("/topic/a", 3)
	m.SlowConsumerDisconnect()
	m.LatestReplaced("r")
	m.SubscriberCapRefused("r")
}

func TestNewRegistry(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	if _, err := New(reg, Config{}); err != nil {
		t.Fatalf("New(NewRegistry()): %v", err)
	}
	fams := gather(t, reg)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "stompgate_sessions_active"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("NewRegistry: no %s after Gather", name)
		}
	}
}

// Every metric has help text, a stompgate_ name and passes promlint (base
// units, _total on counters).
func TestLint(t *testing.T) {
	t.Parallel()
	_, reg := newTestMetrics(t, Config{DestinationPrefixes: []string{"/topic/"}})
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for name, mf := range gather(t, reg) {
		if !strings.HasPrefix(name, "stompgate_") {
			t.Errorf("metric %s lacks the stompgate_ prefix", name)
		}
		if mf.GetHelp() == "" {
			t.Errorf("metric %s has no help text", name)
		}
	}
}

// doc.go is the reference for operators: it must name every metric.
func TestDocListsEveryMetric(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, reg := newTestMetrics(t, Config{})
	for name := range gather(t, reg) {
		if !strings.Contains(string(doc), name) {
			t.Errorf("doc.go does not describe %s", name)
		}
	}
}

// Rule names get series of their own once SetRules resolves them; a
// rule not named counts as "other", for every per-rule metric.
func TestRules(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.SetRules([]string{"game_state", "lobby"})
	m.LatestReplaced("game_state")
	m.LatestReplaced("game_state")
	m.LatestReplaced("added_by_reload")
	m.SubscriberCapRefused("lobby")
	m.SubscriberCapRefused("")
	m.RuleFramesDropped("lobby", 3)
	for _, c := range []struct {
		name, rule string
		want       float64
	}{
		{"stompgate_latest_replaced_total", "game_state", 2},
		{"stompgate_latest_replaced_total", "lobby", 0},
		{"stompgate_latest_replaced_total", "other", 1},
		{"stompgate_subscriber_cap_refusals_total", "lobby", 1},
		{"stompgate_subscriber_cap_refusals_total", "other", 1},
		{"stompgate_rule_frames_dropped_total", "lobby", 3},
	} {
		if got := sample(t, reg, c.name, "rule", c.rule); got != c.want {
			t.Errorf(`%s{rule=%q} = %v, want %v`, c.name, c.rule, got, c.want)
		}
	}
}
