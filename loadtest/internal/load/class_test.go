package load

import (
	"testing"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

func TestClassReport(t *testing.T) {
	c := &Class{Name: "c", Fanout: 3, Publishers: 2, Subscribers: 3}
	c.Sent.Store(100)
	c.Delivered.Store(270)
	c.Errors.Store(1)
	c.Pubs = []*Publisher{{Sent: 40}, {Sent: 60}}
	for _, n := range []int64{100, 90, 80} {
		s := &Subscriber{Hist: report.NewHistogram()}
		s.Delivered.Store(n)
		report.RecordMicros(s.Hist, n*1000)
		c.Subs = append(c.Subs, s)
	}
	r := c.Report(2, 240)
	checks := []struct {
		what      string
		got, want float64
	}{
		{"Sent", float64(r.Sent), 100},
		{"Expected", float64(r.Expected), 300},
		{"Delivered", float64(r.Delivered), 270},
		{"DeliveryRatio", r.DeliveryRatio, 0.9},
		{"SentPerSec", r.SentPerSec, 50},
		{"DeliveredPerSec", r.DeliveredPerSec, 120},
		{"Errors", float64(r.Errors), 1},
		{"PerPublisherSent.Min", float64(r.PerPublisherSent.Min), 40},
		{"PerPublisherSent.Max", float64(r.PerPublisherSent.Max), 60},
		{"PerSubscriberDelivered.Min", float64(r.PerSubscriberDelivered.Min), 80},
		{"PerSubscriberDelivered.Max", float64(r.PerSubscriberDelivered.Max), 100},
		{"Latency.Count", float64(r.Latency.Count), 3},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}
