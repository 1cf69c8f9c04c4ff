package tracing

import (
	"sync/atomic"
	"time"
)

// budget caps the traces a Tracer starts per second: a fixed window of
// one second, reset lazily by the first draw that finds it over, like
// the session limiter. Two draws racing at the window's edge may let a
// few more through; the cap bounds the cost, it does not count exactly.
// The zero value (max 0) caps nothing.
type budget struct {
	max    int64
	window atomic.Int64 // the second counted, Unix time
	n      atomic.Int64 // traces started in it
	capped atomic.Uint64
}

// take reports whether a trace may start at now, counting it when it
// may and the refusal when it may not.
func (b *budget) take(now time.Time) bool {
	if b.max <= 0 {
		return true
	}
	sec := now.Unix()
	if w := b.window.Load(); w != sec && b.window.CompareAndSwap(w, sec) {
		b.n.Store(0)
	}
	if b.n.Add(1) > b.max {
		b.capped.Add(1)
		return false
	}
	return true
}
