// Package load is loadtest's load: publishers that send stamped SEND
// frames at a pace or as fast as a window allows, subscribers that read
// MESSAGE frames and record latency, and the classes that count them.
package load

import (
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// Class is a group of sessions counted together (normal users, abusers,
// throughput publishers). Counters are added per WebSocket message, not
// per frame, so they cost an atomic add per batch.
type Class struct {
	Name string // normal, abuser, publisher, ...
	// Fanout is how many deliveries one sent message should produce: the
	// number of subscriptions on its destination.
	Fanout      int64
	Publishers  int // sessions that send
	Subscribers int // sessions that subscribe

	Sent      atomic.Int64 // SEND frames written
	Delivered atomic.Int64 // MESSAGE frames read by this class's subscribers
	Errors    atomic.Int64 // failed dials, ERROR frames, broken connections

	Pubs []*Publisher  // the class's publishers, for the spread
	Subs []*Subscriber // the class's subscribers, for the spread
}

// Report builds the class's report; loadSeconds is the load period and
// deliveredInLoad the deliveries counted within it.
func (c *Class) Report(loadSeconds float64, deliveredInLoad int64) report.ClassReport {
	r := report.ClassReport{
		Name:        c.Name,
		Publishers:  c.Publishers,
		Subscribers: c.Subscribers,
		Sent:        c.Sent.Load(),
		Delivered:   c.Delivered.Load(),
		Errors:      c.Errors.Load(),
	}
	r.Expected = r.Sent * c.Fanout
	r.DeliveryRatio = report.Round3(report.Ratio(r.Delivered, r.Expected))
	if loadSeconds > 0 {
		r.SentPerSec = report.Round3(float64(r.Sent) / loadSeconds)
		r.DeliveredPerSec = report.Round3(float64(deliveredInLoad) / loadSeconds)
	}
	var sent, got []int64
	for _, p := range c.Pubs {
		sent = append(sent, p.Sent)
	}
	var h *hdrhistogram.Histogram
	for _, s := range c.Subs {
		got = append(got, s.Delivered.Load())
		if s.Hist == nil {
			continue
		}
		if h == nil {
			h = report.NewHistogram()
		}
		h.Merge(s.Hist)
	}
	r.PerPublisherSent = report.SpreadOf(sent)
	r.PerSubscriberDelivered = report.SpreadOf(got)
	r.Latency = report.Summarize(h)
	return r
}
