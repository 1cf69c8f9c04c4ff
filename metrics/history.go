package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/outcome"
)

// HistoryStats is what NewHistoryCollector reads at each scrape: the
// figures of the history stores, the history publisher, the reader and
// the recoveries, gathered by cmd/wsserver so that metrics needs no
// import of package history.
type HistoryStats struct {
	// Appended counts messages appended to histories.
	Appended uint64
	// QueueFull and RedisFailed count messages lost before a history
	// had them: the publisher's queue full, Redis failing the batch.
	QueueFull, RedisFailed uint64
	// Epochs counts epochs started (continuity lost, or a new history).
	Epochs uint64
	// Reads counts history reads sent to the store; Shared the
	// recoveries answered by a read another began; Uncoalesced the
	// reads made alone because too many destinations were being read;
	// ReadErrors the reads that failed.
	Reads, Shared, Uncoalesced, ReadErrors uint64
	// Recovered counts recoveries that replayed everything missed.
	Recovered uint64
	// NotRecovered counts the others by reason, in the order of
	// outcome.RecoveryReasons; missing entries count 0.
	NotRecovered []uint64
	// Replayed counts messages replayed.
	Replayed uint64
	// Gaps counts live messages that did not follow the one before.
	Gaps uint64
	// MemoryBytes and MemoryDestinations are what the memory store
	// holds now; MemoryEvicted counts the histories it evicted.
	MemoryBytes        int64
	MemoryDestinations int
	MemoryEvicted      uint64
}

// NewHistoryCollector returns a collector that reads stats at each
// scrape and exposes:
//
//   - stompgate_history_appended_total: messages appended to histories.
//   - stompgate_history_publish_lost_total{reason}: messages of
//     destinations with history lost before a history had them
//     (queue_full: the bound of the publisher's queue biting;
//     redis_error).
//   - stompgate_history_epochs_total: epochs started; each tells the
//     clients of that destination that their positions are void.
//   - stompgate_history_reads_total, stompgate_history_reads_shared_total,
//     stompgate_history_reads_uncoalesced_total (the reader's bound on
//     destinations tracked biting) and stompgate_history_read_errors_total.
//   - stompgate_history_recoveries_total{result, reason}: recoveries
//     settled, recovered (reason "none") or not_recovered by reason.
//   - stompgate_history_replayed_messages_total: messages replayed.
//   - stompgate_history_gaps_total: live messages that skipped offsets
//     or changed epoch, each starting a new recovery.
//   - stompgate_history_memory_bytes, stompgate_history_memory_destinations
//     (gauges) and stompgate_history_memory_evictions_total: the memory
//     store of a single instance (0 with Redis); evictions are its bounds
//     biting.
//
// Register it on the same registerer as New's collectors.
func NewHistoryCollector(stats func() HistoryStats) prometheus.Collector {
	return &historyCollector{stats: stats}
}

func historyDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("stompgate_history_"+name, help, labels, nil)
}

var (
	historyAppendedDesc    = historyDesc("appended_total", "Messages appended to destination histories.")
	historyLostDesc        = historyDesc("publish_lost_total", "Messages of destinations with history lost before a history had them, by reason.", "reason")
	historyEpochsDesc      = historyDesc("epochs_total", "History epochs started: continuity lost, or a new history.")
	historyReadsDesc       = historyDesc("reads_total", "History reads sent to the store.")
	historySharedDesc      = historyDesc("reads_shared_total", "Recoveries answered by a history read another recovery began.")
	historyUncoalescedDesc = historyDesc("reads_uncoalesced_total", "History reads made alone because the reader tracked its most destinations.")
	historyReadErrorsDesc  = historyDesc("read_errors_total", "History reads that failed.")
	historyRecoveriesDesc  = historyDesc("recoveries_total", "Recoveries settled, by result and reason.", "result", "reason")
	historyReplayedDesc    = historyDesc("replayed_messages_total", "Messages replayed by recoveries.")
	historyGapsDesc        = historyDesc("gaps_total", "Live messages that did not follow the one before them, each starting a new recovery.")
	historyMemBytesDesc    = historyDesc("memory_bytes", "Bytes the memory history store holds.")
	historyMemDestsDesc    = historyDesc("memory_destinations", "Destinations the memory history store holds a history of.")
	historyMemEvictedDesc  = historyDesc("memory_evictions_total", "Histories the memory store evicted for its bounds.")
)

// historyCollector is the prometheus.Collector of NewHistoryCollector.
type historyCollector struct {
	stats func() HistoryStats
}

func (c *historyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{historyAppendedDesc, historyLostDesc, historyEpochsDesc, historyReadsDesc,
		historySharedDesc, historyUncoalescedDesc, historyReadErrorsDesc, historyRecoveriesDesc, historyReplayedDesc,
		historyGapsDesc, historyMemBytesDesc, historyMemDestsDesc, historyMemEvictedDesc} {
		ch <- d
	}
}

func (c *historyCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(historyAppendedDesc, st.Appended)
	counter(historyLostDesc, st.QueueFull, outcome.HistoryLostQueueFull)
	counter(historyLostDesc, st.RedisFailed, outcome.HistoryLostRedisError)
	counter(historyEpochsDesc, st.Epochs)
	counter(historyReadsDesc, st.Reads)
	counter(historySharedDesc, st.Shared)
	counter(historyUncoalescedDesc, st.Uncoalesced)
	counter(historyReadErrorsDesc, st.ReadErrors)
	counter(historyRecoveriesDesc, st.Recovered, outcome.RecoveryRecovered, outcome.RecoveryNone)
	for i, r := range outcome.RecoveryReasons() {
		var v uint64
		if i < len(st.NotRecovered) {
			v = st.NotRecovered[i]
		}
		counter(historyRecoveriesDesc, v, outcome.RecoveryNotRecovered, r)
	}
	counter(historyReplayedDesc, st.Replayed)
	counter(historyGapsDesc, st.Gaps)
	ch <- prometheus.MustNewConstMetric(historyMemBytesDesc, prometheus.GaugeValue, float64(st.MemoryBytes))
	ch <- prometheus.MustNewConstMetric(historyMemDestsDesc, prometheus.GaugeValue, float64(st.MemoryDestinations))
	counter(historyMemEvictedDesc, st.MemoryEvicted)
}
