package metrics

import (
	"slices"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/stompgate/stompgate/outcome"
)

// MaxDestinationPrefixes bounds Config.DestinationPrefixes. Each prefix is
// one series of stompgate_messages_delivered_total and one string compare
// per delivered MESSAGE in the worst case, so the list must stay short.
const MaxDestinationPrefixes = 50

// labelOther is the label value for anything outside a label's known set:
// an unknown command, kind or store, a destination that matches no
// configured prefix, an enum value this package does not name.
const labelOther = "other"

// Config configures New. The zero value is ready to use.
type Config struct {
	// DestinationPrefixes are the destination prefixes that get their own
	// label value on stompgate_messages_delivered_total (for example
	// "/topic/room."). A destination is counted under the longest prefix it
	// starts with; one that matches none is counted as "other". Empty (the
	// default): every destination is "other". At most
	// MaxDestinationPrefixes entries, each non-empty valid UTF-8, no
	// duplicates, and not the literal "other".
	DestinationPrefixes []string
	// Build names the running build on stompgate_build_info; see
	// BuildInfo for what its zero value reports.
	Build BuildInfo
}

// withDefaults returns a validated copy of c with the prefixes sorted
// longest first, so the first match in Delivered is the longest one.
func (c Config) withDefaults() (Config, error) {
	if n := len(c.DestinationPrefixes); n > MaxDestinationPrefixes {
		return c, configErrorf("DestinationPrefixes has %d entries, more than the maximum %d", n, MaxDestinationPrefixes)
	}
	seen := make(map[string]int, len(c.DestinationPrefixes))
	for i, p := range c.DestinationPrefixes {
		switch {
		case p == "":
			return c, configErrorf("DestinationPrefixes[%d] is empty", i)
		case !utf8.ValidString(p):
			return c, configErrorf("DestinationPrefixes[%d] %q is not valid UTF-8", i, p)
		case p == labelOther:
			return c, configErrorf("DestinationPrefixes[%d] %q is reserved for destinations that match no prefix", i, p)
		}
		if j, dup := seen[p]; dup {
			return c, configErrorf("DestinationPrefixes[%d] %q repeats DestinationPrefixes[%d]", i, p, j)
		}
		seen[p] = i
	}
	c.DestinationPrefixes = slices.Clone(c.DestinationPrefixes)
	slices.SortStableFunc(c.DestinationPrefixes, func(a, b string) int { return len(b) - len(a) })
	return c, nil
}

// Metrics holds stompgate's Prometheus collectors. Every label value a
// method can produce is resolved once in New, so the per-frame methods
// only pick a pre-resolved counter and add to it: no allocation, no map
// lookup, no lock.
//
// A nil *Metrics is valid: every method on it does nothing, so code paths
// that run without metrics need no checks. Metrics is safe for concurrent
// use.
type Metrics struct {
	sessionsActive      prometheus.Gauge
	sessionsOpened      prometheus.Counter
	sessionsClosed      map[*outcome.Close]prometheus.Counter
	sessionsClosedOther prometheus.Counter

	handshakes         map[*outcome.Handshake]prometheus.Counter
	handshakesOther    prometheus.Counter
	limiterDecision    []prometheus.Observer
	limiterStoreErrors []prometheus.Counter
	limiterFallback    prometheus.Gauge
	limiterLocal       []prometheus.Counter
	limiterConfirm     [numConfirmResults]prometheus.Counter

	framesReceived      [numCommands]prometheus.Counter
	framesPassed        [numCommands]prometheus.Counter
	framesDropped       [numCommands][numDropReasons]prometheus.Counter
	protocolErrors      map[string]prometheus.Counter
	protocolErrorsOther prometheus.Counter

	// prefixes are the configured destination prefixes, longest first;
	// delivered[i] counts prefixes[i] and delivered[len(prefixes)] counts
	// "other".
	prefixes         []string
	delivered        []prometheus.Counter
	slowConsumer     prometheus.Counter
	panics           prometheus.Counter
	readerPauses     prometheus.Counter
	heartBeatsCapped prometheus.Counter
	// sessionsCompressed counts sessions that negotiated compression.
	sessionsCompressed prometheus.Counter

	relay   relayMetrics
	caps    capMetrics
	plimit  principalLimitMetrics
	backend backendMetrics
	input   inputMetrics
	// reconnect counts the reconnect-loop bans' CONNECTs and bans.
	reconnect reconnectMetrics

	admission admissionMetrics
	listener  listenerMetrics

	httpTimeouts []prometheus.Counter

	prefixRefusals []prometheus.Counter
	procsChanges   []prometheus.Counter

	rules ruleMetrics

	presence presenceMetrics

	latency latencyMetrics
}

// New builds the collectors, registers them on reg and resolves every
// labelled child. A nil reg builds working collectors that are registered
// nowhere (useful in tests of other packages).
//
// New fails with an error matching ErrInvalidConfig when cfg is unusable,
// and with one matching ErrRegister when reg refuses a collector, for
// example because New already ran on the same registry. On failure nothing
// stays registered on reg.
func New(reg prometheus.Registerer, cfg Config) (*Metrics, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &builder{reg: reg}
	m := &Metrics{prefixes: cfg.DestinationPrefixes}
	m.buildSessions(b)
	m.buildHandshakes(b)
	m.buildFrames(b)
	m.buildDelivery(b)
	m.buildRelay(b)
	m.buildSessionCaps(b)
	m.buildPrincipalLimit(b)
	m.buildReconnect(b)
	m.buildPresence(b)
	m.buildHTTP(b)
	m.buildPrefix(b)
	m.buildBackend(b)
	m.buildInput(b)
	m.buildBuildInfo(b, cfg.Build)
	m.buildProcs(b)
	m.buildRules(b)
	m.buildAdmission(b)
	m.buildLatency(b)
	m.buildListener(b)
	if b.err != nil {
		b.rollback()
		return nil, b.err
	}
	return m, nil
}

// NewRegistry returns a registry with the Go runtime and process collectors
// registered, ready for New and for promhttp.HandlerFor.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// Two distinct collectors on an empty registry cannot collide, so
	// MustRegister cannot panic here.
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// builder is the Registerer handed to promauto. promauto's factories call
// MustRegister, which panics on a duplicate; builder keeps the first error
// instead, so that New can undo what it registered and return the error.
// Once an error is kept, later collectors are built but not registered.
type builder struct {
	reg  prometheus.Registerer // nil: register nowhere
	name string                // metric being built, for the error message
	done []prometheus.Collector
	err  error
}

var _ prometheus.Registerer = (*builder)(nil)

// Register registers c on the underlying registerer unless an earlier
// collector failed.
func (b *builder) Register(c prometheus.Collector) error {
	if b.err != nil || b.reg == nil {
		return b.err
	}
	if err := b.reg.Register(c); err != nil {
		b.err = &registerError{name: b.name, err: err}
		return b.err
	}
	b.done = append(b.done, c)
	return nil
}

// MustRegister registers each collector, keeping the first error instead of
// panicking.
func (b *builder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = b.Register(c)
	}
}

// Unregister forwards to the underlying registerer.
func (b *builder) Unregister(c prometheus.Collector) bool {
	return b.reg != nil && b.reg.Unregister(c)
}

// rollback unregisters every collector registered so far.
func (b *builder) rollback() {
	for _, c := range b.done {
		b.reg.Unregister(c)
	}
	b.done = nil
}

// resolve sets children[i] to child(values[i]): the child of a one-label
// vector for each of the label's values, so that the methods called per
// event index an array and never call WithLabelValues.
func resolve[T any](children []T, values []string, child func(...string) T) {
	for i, v := range values {
		children[i] = child(v)
	}
}

// resolveAll returns the children of every value, in order: the counters
// of a label set taken from package outcome, whose length is the list's.
func resolveAll[T any](values []string, child func(...string) T) []T {
	children := make([]T, len(values))
	resolve(children, values, child)
	return children
}

func (b *builder) counter(name, help string) prometheus.Counter {
	b.name = name
	return promauto.With(b).NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func (b *builder) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	b.name = name
	return promauto.With(b).NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func (b *builder) gauge(name, help string) prometheus.Gauge {
	b.name = name
	return promauto.With(b).NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func (b *builder) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	b.name = name
	return promauto.With(b).NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func (b *builder) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	b.name = name
	return promauto.With(b).NewHistogramVec(
		prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
