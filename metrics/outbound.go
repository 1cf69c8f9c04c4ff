package metrics

import "github.com/prometheus/client_golang/prometheus"

// OutboundStats is what NewOutboundCollector reads at each scrape: the
// server's figures (server.OutboundStats) converted field for field, so
// that metrics needs no import of the server.
type OutboundStats struct {
	// Queued is the bytes all sessions hold for writing now.
	Queued int64
	// Limit is the bound on Queued, or 0 when there is none.
	Limit int64
	// Shed counts the sessions closed, since start, because Queued went
	// over Limit.
	Shed uint64
}

// NewOutboundCollector returns a collector that reads the server's
// server-wide outbound figures at each scrape and exposes them as:
//
//   - stompgate_outbound_queued_bytes (gauge): bytes all sessions hold
//     for writing now (OutboundStats.Queued).
//   - stompgate_outbound_budget_bytes (gauge): the bound on them
//     (server.Config.OutboundTotalBytes); 0 when there is none.
//   - stompgate_outbound_budget_sheds_total: sessions closed because the
//     total went over the bound, the largest backlogs first (the bound
//     biting); each is also counted in
//     stompgate_sessions_closed_total{reason="outbound_budget"}.
//
// Reading at the scrape keeps the delivery path free of metric updates.
// Register it on the same registerer as New's collectors. stats must be
// safe for concurrent use, as (*server.Server).OutboundStats is.
func NewOutboundCollector(stats func() OutboundStats) prometheus.Collector {
	return &outboundCollector{stats: stats}
}

var (
	outboundQueuedDesc = prometheus.NewDesc("stompgate_outbound_queued_bytes",
		"Bytes all sessions hold for writing (outbound queues and writes in flight).", nil, nil)
	outboundBudgetDesc = prometheus.NewDesc("stompgate_outbound_budget_bytes",
		"Bound on the bytes all sessions hold for writing; 0 when there is none.", nil, nil)
	outboundShedDesc = prometheus.NewDesc("stompgate_outbound_budget_sheds_total",
		"Sessions closed because the bytes all sessions hold for writing went over the bound, largest backlogs first.", nil, nil)
)

// outboundCollector is the prometheus.Collector of NewOutboundCollector.
type outboundCollector struct {
	stats func() OutboundStats
}

func (c *outboundCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboundQueuedDesc
	ch <- outboundBudgetDesc
	ch <- outboundShedDesc
}

func (c *outboundCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(outboundQueuedDesc, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(outboundBudgetDesc, prometheus.GaugeValue, float64(st.Limit))
	ch <- prometheus.MustNewConstMetric(outboundShedDesc, prometheus.CounterValue, float64(st.Shed))
}
