package metrics

import "github.com/stompgate/stompgate/outcome"

// ProcsReason is the reason label of stompgate_procs_changes_total.
type ProcsReason uint8

// Why -adaptive-procs changed the processors the server runs on. A value
// outside this list is counted as "other".
const (
	// ProcsOther is a reason this package does not name.
	ProcsOther ProcsReason = iota
	// ProcsLoad: a tick's CPU time filled the processors in use; all
	// came back.
	ProcsLoad
	// ProcsQueue: between ticks, goroutines waited for a processor; all
	// came back at once.
	ProcsQueue
	// ProcsLower: the load fitted in one processor fewer for long
	// enough; one was given up.
	ProcsLower
)

// The label values come from package outcome, where internal/procs takes
// them too.
var procsReasonLabels = append([]string{labelOther}, outcome.ProcsReasons()...)

// ProcsReasonOf returns the ProcsReason of a reason procs reported;
// anything else is ProcsOther.
func ProcsReasonOf(reason string) ProcsReason {
	return enumOf[ProcsReason](procsReasonLabels, reason)
}

// String returns the label value r is counted under.
func (r ProcsReason) String() string { return labelOf(procsReasonLabels, r) }

func (m *Metrics) buildProcs(b *builder) {
	changes := b.counterVec("stompgate_procs_changes_total",
		"Changes of the processors the server runs on (-adaptive-procs), by reason: load (a tick filled them), queue (goroutines waited between ticks), lower (one given up).",
		"reason")
	m.procsChanges = resolveAll(procsReasonLabels, changes.WithLabelValues)
}

// ProcsChanged counts one change of the processors in use
// (stompgate_procs_changes_total{reason}).
func (m *Metrics) ProcsChanged(r ProcsReason) {
	if m == nil {
		return
	}
	m.procsChanges[known(procsReasonLabels, r)].Inc()
}
