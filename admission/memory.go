package admission

import (
	"runtime/metrics"
	"time"
)

// DefaultMemoryInterval is the default Config.MemoryInterval: the memory
// figure is read at most ten times a second, so a storm of handshakes
// does not read it once each, and a figure is never older than a tenth
// of a second, less than the time a storm takes to add much to it.
const DefaultMemoryInterval = 100 * time.Millisecond

// runtimeMemorySamples are the runtime/metrics the memory guard reads:
// all the memory the Go runtime has mapped, less the heap it has given
// back to the operating system. That is the figure Go's soft memory
// limit (debug.SetMemoryLimit, GOMEMLIMIT) is held against.
var runtimeMemorySamples = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
}

// RuntimeMemory returns the memory the Go runtime holds as its soft
// memory limit counts it: /memory/classes/total:bytes less
// /memory/classes/heap/released:bytes (runtime/metrics). It is the
// default Config.ReadMemory; reading it takes a few microseconds and no
// stop-the-world.
func RuntimeMemory() uint64 {
	s := make([]metrics.Sample, len(runtimeMemorySamples))
	for i, name := range runtimeMemorySamples {
		s[i].Name = name
	}
	metrics.Read(s)
	var v [2]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	if v[1] > v[0] {
		return 0
	}
	return v[0] - v[1]
}

// memoryGauge caches the memory figure between reads. It is guarded by
// the Gate's mutex.
type memoryGauge struct {
	read     func() uint64
	interval time.Duration
	at       time.Time // when used was read; zero: never
	used     uint64
}

// usedAt returns the figure, read again when the cached one is older
// than the interval at now (or from the future: a clock stepped back).
func (m *memoryGauge) usedAt(now time.Time) uint64 {
	if m.at.IsZero() || now.Sub(m.at) >= m.interval || now.Before(m.at) {
		m.used = m.read()
		m.at = now
	}
	return m.used
}
