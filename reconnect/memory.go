package reconnect

import (
	"sync"
	"time"
)

// DefaultMaxKeys is the default MemoryConfig.MaxKeys: a minute of
// CONNECTs from 100,000 different addresses and principals, far beyond
// what the handshake limit lets one instance admit from honest clients,
// in about 10 MB (a key of up to 64 bytes and its window, with the map's
// own overhead).
const DefaultMaxKeys = 100_000

// evictSample is how many entries a full MemoryStore looks at to choose
// the one it forgets: enough that a sample of only looping keys is
// unlikely while one-off keys fill the map, few enough to stay O(1).
const evictSample = 16

// MemoryConfig configures a MemoryStore. The zero value works.
type MemoryConfig struct {
	// MaxKeys bounds the keys the store counts at once. When it is
	// reached, a new key takes the place of an expired one or, if the
	// sampled entries are all live, of the one with the fewest CONNECTs
	// (see MemoryStore). Zero means DefaultMaxKeys; negative is an error.
	MaxKeys int
}

// window is one key's count: the CONNECTs counted since start.
type window struct {
	start int64 // Unix nanoseconds
	n     int
}

// MemoryStore counts CONNECTs per key in fixed windows in process
// memory: the only store of a single instance, and the one a Counter
// answers from while Redis is unreachable.
//
// A key's window starts at its first CONNECT and lasts the window the
// caller gives; the first CONNECT after it starts a new one (lazy
// expiry: nothing walks the map on a timer). At most MaxKeys keys are
// held. A new key that finds the map full forgets one of evictSample
// entries: an expired one if the sample holds one, else the one with the
// fewest CONNECTs (the oldest among equals). A flood of one-off keys,
// each counted once, so pushes out its own kind before a looping key,
// whose count is high, and a key pushed out loses only what it counted.
//
// A MemoryStore is safe for concurrent use; one mutex guards the map, as
// CONNECTs arrive at the handshake rate, not the message rate.
type MemoryStore struct {
	max int

	mu sync.Mutex
	// keys holds each key's window. Guarded by mu.
	keys map[string]window
}

// NewMemoryStore returns a MemoryStore configured by cfg.
func NewMemoryStore(cfg MemoryConfig) (*MemoryStore, error) {
	if cfg.MaxKeys < 0 {
		return nil, configErrorf("MemoryConfig.MaxKeys %d is negative", cfg.MaxKeys)
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	return &MemoryStore{max: cfg.MaxKeys, keys: make(map[string]window)}, nil
}

// CountAt counts one CONNECT of key at now in windows of length d and
// returns how many the key's current window holds, this one included.
func (m *MemoryStore) CountAt(key string, now time.Time, d time.Duration) int {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.keys[key]
	switch {
	case ok && !expired(w, t, d):
		w.n++
	case !ok && len(m.keys) >= m.max:
		m.evictLocked(t, d)
		fallthrough
	default:
		w = window{start: t, n: 1}
	}
	m.keys[key] = w
	return w.n
}

// expired reports whether w no longer holds at t: its window of length d
// is over, or the clock went back before its start.
func expired(w window, t int64, d time.Duration) bool {
	return t-w.start >= int64(d) || t < w.start
}

// evictLocked forgets one entry of a sample of the map: the first
// expired one, else the one with the fewest CONNECTs, the oldest among
// equals.
func (m *MemoryStore) evictLocked(t int64, d time.Duration) {
	var (
		victim string
		least  window
		seen   int
	)
	for k, w := range m.keys {
		if expired(w, t, d) {
			victim = k
			break
		}
		if seen == 0 || w.n < least.n || (w.n == least.n && w.start < least.start) {
			victim, least = k, w
		}
		if seen++; seen == evictSample {
			break
		}
	}
	delete(m.keys, victim)
}

// Len returns how many keys the store holds, expired ones not yet
// forgotten included.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}
