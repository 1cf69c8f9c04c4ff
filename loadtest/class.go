package main

import (
	"sync/atomic"

	"github.com/stompgate/stompgate/loadtest/internal/report"

	"github.com/HdrHistogram/hdrhistogram-go"
)

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

// report builds the class's report; loadSeconds is the load period and
// deliveredInLoad the deliveries counted within it.
func (c *class) report(loadSeconds float64, deliveredInLoad int64) report.ClassReport {
	r := report.ClassReport{
		Name:        c.name,
		Publishers:  c.publishers,
		Subscribers: c.subscribers,
		Sent:        c.sent.Load(),
		Delivered:   c.delivered.Load(),
		Errors:      c.errors.Load(),
	}
	r.Expected = r.Sent * c.fanout
	r.DeliveryRatio = report.Round3(report.Ratio(r.Delivered, r.Expected))
	if loadSeconds > 0 {
		r.SentPerSec = report.Round3(float64(r.Sent) / loadSeconds)
		r.DeliveredPerSec = report.Round3(float64(deliveredInLoad) / loadSeconds)
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
			h = report.NewHistogram()
		}
		h.Merge(s.hist)
	}
	r.PerPublisherSent = report.SpreadOf(sent)
	r.PerSubscriberDelivered = report.SpreadOf(got)
	r.Latency = report.Summarize(h)
	return r
}
