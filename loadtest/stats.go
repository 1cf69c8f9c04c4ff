package main

import (
	"math"
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histogram range: 1 µs to 60 s at 3 significant digits. A
// message slower than a minute is recorded as a minute.
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histSigFigs   = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// recordMicros records one latency, clamped to the histogram's range.
func recordMicros(h *hdrhistogram.Histogram, us int64) {
	_ = h.RecordValue(min(max(us, histMinMicros), histMaxMicros))
}

// class is a group of sessions counted together (normal users, abusers,
// throughput publishers). Counters are added per WebSocket message, not
// per frame, so they cost an atomic add per batch.
type class struct {
	name string
	// fanout is how many deliveries one sent message should produce: the
	// number of subscriptions on its destination.
	fanout      int64
	publishers  int
	subscribers int

	sent      atomic.Int64 // SEND frames written
	delivered atomic.Int64 // MESSAGE frames read by this class's subscribers
	errors    atomic.Int64 // failed dials, ERROR frames, broken connections

	pubs []*publisher
	subs []*subscriber
}

// latencySummary is a latency distribution in milliseconds.
type latencySummary struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// summarize reads the percentiles of a histogram of microseconds. The
// values are the histogram's bucket bounds: exact to 3 significant digits.
func summarize(h *hdrhistogram.Histogram) *latencySummary {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &latencySummary{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		Max:   ms(h.Max()),
	}
}

// ratio returns a/b, or 0 when b is 0 (nothing was expected).
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// round3 rounds to 3 decimals for readable JSON.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// spread is the smallest and largest per-session count of a class.
type spread struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

func spreadOf(vals []int64) *spread {
	if len(vals) == 0 {
		return nil
	}
	s := spread{Min: vals[0], Max: vals[0]}
	for _, v := range vals[1:] {
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
	}
	return &s
}

// classReport is what a class did over the run.
type classReport struct {
	Name        string `json:"name"`
	Publishers  int    `json:"publishers"`
	Subscribers int    `json:"subscribers"`
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
	Errors          int64   `json:"errors"`
	// PerPublisherSent and PerSubscriberDelivered are the spread across
	// sessions of the class.
	PerPublisherSent       *spread         `json:"per_publisher_sent,omitempty"`
	PerSubscriberDelivered *spread         `json:"per_subscriber_delivered,omitempty"`
	Latency                *latencySummary `json:"latency,omitempty"`
}

// report builds the class's report; loadSeconds is the load period and
// deliveredInLoad the deliveries counted within it.
func (c *class) report(loadSeconds float64, deliveredInLoad int64) classReport {
	r := classReport{
		Name:        c.name,
		Publishers:  c.publishers,
		Subscribers: c.subscribers,
		Sent:        c.sent.Load(),
		Delivered:   c.delivered.Load(),
		Errors:      c.errors.Load(),
	}
	r.Expected = r.Sent * c.fanout
	r.DeliveryRatio = round3(ratio(r.Delivered, r.Expected))
	if loadSeconds > 0 {
		r.SentPerSec = round3(float64(r.Sent) / loadSeconds)
		r.DeliveredPerSec = round3(float64(deliveredInLoad) / loadSeconds)
	}
	var sent, got []int64
	for _, p := range c.pubs {
		sent = append(sent, p.sent)
	}
	var h *hdrhistogram.Histogram
	for _, s := range c.subs {
		got = append(got, s.delivered.Load())
		if s.hist == nil {
			continue
		}
		if h == nil {
			h = newHistogram()
		}
		h.Merge(s.hist)
	}
	r.PerPublisherSent = spreadOf(sent)
	r.PerSubscriberDelivered = spreadOf(got)
	r.Latency = summarize(h)
	return r
}
