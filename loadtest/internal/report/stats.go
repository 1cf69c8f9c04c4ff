package report

import (
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histogram range: 1 µs to 60 s at 3 significant digits. A
// message slower than a minute is recorded as a minute.
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histSigFigs   = 3
)

// NewHistogram returns a latency histogram in microseconds, 1 µs to a
// minute at 3 significant digits.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// RecordMicros records one latency, clamped to the histogram's range.
func RecordMicros(h *hdrhistogram.Histogram, us int64) {
	_ = h.RecordValue(min(max(us, histMinMicros), histMaxMicros))
}

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	Count int64   `json:"count"`   // latencies recorded
	P50   float64 `json:"p50_ms"`  // median
	P90   float64 `json:"p90_ms"`  // 90th percentile
	P99   float64 `json:"p99_ms"`  // 99th percentile
	P999  float64 `json:"p999_ms"` // 99.9th percentile
	Max   float64 `json:"max_ms"`  // slowest
}

// Summarize reads the percentiles of a histogram of microseconds. The
// values are the histogram's bucket bounds: exact to 3 significant digits.
func Summarize(h *hdrhistogram.Histogram) *LatencySummary {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &LatencySummary{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// Ratio returns a/b, or 0 when b is 0 (nothing was expected).
func Ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Round3 rounds to 3 decimals for readable JSON.
func Round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Spread is the smallest and largest per-session count of a class.
type Spread struct {
	Min int64 `json:"min"` // smallest count
	Max int64 `json:"max"` // largest count
}

// SpreadOf returns the spread of vals; nil when there are none.
func SpreadOf(vals []int64) *Spread {
	if len(vals) == 0 {
		return nil
	}
	s := Spread{Min: vals[0], Max: vals[0]}
	for _, v := range vals[1:] {
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	return &s
}

// ClassReport is what a class did over the run.
type ClassReport struct {
	Name        string `json:"name"`        // the class: normal, abuser, ...
	Publishers  int    `json:"publishers"`  // sessions that send
	Subscribers int    `json:"subscribers"` // sessions that subscribe
	// Sent counts SEND frames written; Expected is Sent times the
	// subscriptions per destination; Delivered counts MESSAGE frames read.
	Sent      int64 `json:"sent"`
	Expected  int64 `json:"expected"`
	Delivered int64 `json:"delivered"`
	// DeliveryRatio is Delivered / Expected.
	DeliveryRatio float64 `json:"delivery_ratio"`
	// SentPerSec and DeliveredPerSec are over the load period (-duration).
	SentPerSec      float64 `json:"sent_per_sec"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	// Errors counts failed dials, ERROR frames and broken connections.
	Errors int64 `json:"errors"`
	// PerPublisherSent and PerSubscriberDelivered are the spread across
	// sessions of the class.
	PerPublisherSent       *Spread `json:"per_publisher_sent,omitempty"`
	PerSubscriberDelivered *Spread `json:"per_subscriber_delivered,omitempty"`
	// Latency is from publishing to delivery; nil when none was measured.
	Latency *LatencySummary `json:"latency,omitempty"`
}

// PerMicros is seconds/n in microseconds, 0 when n is 0.
func PerMicros(seconds float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return Round3(seconds * 1e6 / float64(n))
}
