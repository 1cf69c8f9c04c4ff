package procs

import "testing"

// BenchmarkWaitCounter is the cost of one look between ticks: a read of
// the runtime's scheduling latency histogram.
func BenchmarkWaitCounter(b *testing.B) {
	w := newWaitCounter(DefaultWait)
	b.ReportAllocs()
	for b.Loop() {
		w.since()
	}
}
