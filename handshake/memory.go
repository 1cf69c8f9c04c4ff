package handshake

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Defaults of MemoryConfig.
const (
	// DefaultMaxKeys is the default MemoryConfig.MaxKeys. An nginx zone of
	// 10m holds about 160,000 states; 100,000 entries of this store take
	// roughly 10 MB.
	DefaultMaxKeys = 100_000
	// DefaultShards is the default MemoryConfig.Shards: enough that
	// handshakes on a many-core machine rarely meet on one mutex.
	DefaultShards = 64
	// maxMaxKeys bounds MaxKeys so that slot indexes fit in an int32.
	maxMaxKeys = 1 << 30
)

// MemoryConfig configures a MemoryStore. The zero value is ready to use.
type MemoryConfig struct {
	// MaxKeys bounds the number of entries (one per zone and key, plus one
	// per active ban). When full, the least recently used entry is evicted,
	// as nginx evicts from a full zone; an evicted key starts again at
	// rest. Zero means DefaultMaxKeys; negative is an error.
	MaxKeys int
	// Shards is the number of independently locked parts the entries are
	// spread over by key hash. Zero means DefaultShards, reduced to MaxKeys
	// if that is smaller; negative is an error.
	Shards int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// MemoryStore is the limit_req algorithm (see the package documentation) in
// process memory: a fixed number of shards, each a mutex-guarded map with an
// LRU list, bounded in total by MaxKeys. Decisions are exact to the
// millisecond of its clock. It allocates nothing per decision once an
// entry's slot exists.
//
// A MemoryStore is safe for concurrent use. Its state is local to the
// process: each server instance counts separately. Use NewMemoryStore to
// create one; the zero value is not usable.
type MemoryStore struct {
	now    func() time.Time
	seed   maphash.Seed
	shards []memShard
}

// NewMemoryStore returns a MemoryStore configured by cfg.
func NewMemoryStore(cfg MemoryConfig) (*MemoryStore, error) {
	if cfg.MaxKeys < 0 {
		return nil, configErrorf("MemoryConfig.MaxKeys %d is negative", cfg.MaxKeys)
	}
	if cfg.Shards < 0 {
		return nil, configErrorf("MemoryConfig.Shards %d is negative", cfg.Shards)
	}
	if cfg.MaxKeys > maxMaxKeys {
		return nil, configErrorf("MemoryConfig.MaxKeys %d is above %d", cfg.MaxKeys, maxMaxKeys)
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Shards == 0 {
		cfg.Shards = min(DefaultShards, cfg.MaxKeys)
	}
	if cfg.Shards > cfg.MaxKeys {
		return nil, configErrorf("MemoryConfig.Shards %d is above MaxKeys %d", cfg.Shards, cfg.MaxKeys)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &MemoryStore{
		now:    cfg.Now,
		seed:   maphash.MakeSeed(),
		shards: make([]memShard, cfg.Shards),
	}
	// Spread MaxKeys exactly: the first MaxKeys%Shards shards hold one more.
	per, extra := cfg.MaxKeys/cfg.Shards, cfg.MaxKeys%cfg.Shards
	for i := range s.shards {
		n := per
		if i < extra {
			n++
		}
		s.shards[i].init(n)
	}
	return s, nil
}

// Allow is shorthand for AllowAt(now(), key, l); ctx is not used.
func (s *MemoryStore) Allow(_ context.Context, key string, l Limit) (Result, error) {
	return s.AllowAt(s.now(), key, l)
}

// AllowAt decides one request for key under l at time now (truncated to the
// millisecond). A banned key is refused with Banned set and its state left
// untouched.
func (s *MemoryStore) AllowAt(now time.Time, key string, l Limit) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	nowMs := now.UnixMilli()
	sh := s.shard(key)

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if until, ok := sh.banUntilLocked(key, nowMs); ok {
		r := Result{RetryAfter: time.Duration(until-nowMs) * time.Millisecond, Store: StoreMemory, Banned: true}
		if i, ok := sh.index[memKey{zone: l.Name, key: key}]; ok {
			r.Excess = sh.nodes[i].state.excess
		}
		return r, nil
	}
	k := memKey{zone: l.Name, key: key}
	i, found := sh.index[k]
	var b bucket
	if found {
		b = sh.nodes[i].state
	}
	allowed, next, retryMs := decide(b, !found, nowMs, l.Rate, l.Burst)
	if !allowed {
		// Only a known key can be refused: a fresh one always passes.
		sh.touchLocked(i)
		return Result{RetryAfter: time.Duration(retryMs) * time.Millisecond, Excess: b.excess, Store: StoreMemory}, nil
	}
	if found {
		sh.nodes[i].state = next
		sh.touchLocked(i)
	} else {
		sh.insertLocked(k, memNode{state: next})
	}
	return Result{Allowed: true, Excess: next.excess, Store: StoreMemory}, nil
}

// known reports whether the store holds state for key in zone: the key
// made a request it admitted, within about the time its bucket takes to
// drain.
func (s *MemoryStore) known(key, zone string) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.index[memKey{zone: zone, key: key}]
	return ok
}

// Ban is shorthand for BanAt(now(), key, d); ctx is not used.
func (s *MemoryStore) Ban(_ context.Context, key string, d time.Duration) error {
	return s.BanAt(s.now(), key, d)
}

// BanAt bans key from now for d (rounded up to whole milliseconds), in
// every zone; d of zero or less lifts the ban. A ban takes one entry and
// is subject to LRU eviction like any other, but each refused request and
// each BannedAt that finds it refreshes it.
func (s *MemoryStore) BanAt(now time.Time, key string, d time.Duration) error {
	if key == "" {
		return ErrEmptyKey
	}
	sh := s.shard(key)
	k := memKey{key: key, ban: true}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i, found := sh.index[k]
	if d <= 0 {
		if found {
			sh.removeLocked(i)
		}
		return nil
	}
	until := now.UnixMilli() + banMs(d)
	if found {
		sh.nodes[i].banUntilMs = until
		sh.touchLocked(i)
		return nil
	}
	sh.insertLocked(k, memNode{banUntilMs: until})
	return nil
}

// Banned is shorthand for BannedAt(now(), key); ctx is not used.
func (s *MemoryStore) Banned(_ context.Context, key string) (time.Duration, bool, error) {
	return s.BannedAt(s.now(), key)
}

// BannedAt reports whether key is banned at now and for how much longer,
// without counting a request. An expired ban is removed; a live one is
// refreshed in the LRU list, as a refused request refreshes it.
func (s *MemoryStore) BannedAt(now time.Time, key string) (time.Duration, bool, error) {
	if key == "" {
		return 0, false, ErrEmptyKey
	}
	nowMs := now.UnixMilli()
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	until, ok := sh.banUntilLocked(key, nowMs)
	if !ok {
		return 0, false, nil
	}
	return time.Duration(until-nowMs) * time.Millisecond, true, nil
}

// Len returns the number of entries held (states and bans), at most MaxKeys.
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.index)
		sh.mu.Unlock()
	}
	return n
}

func (s *MemoryStore) shard(key string) *memShard {
	return &s.shards[maphash.String(s.seed, key)%uint64(len(s.shards))]
}

// memKey identifies an entry: the state of one zone for one key, or (ban
// set, zone empty) the ban of one key.
type memKey struct {
	zone string
	key  string
	ban  bool
}

// memNode is one entry, linked into its shard's LRU list by slot index.
type memNode struct {
	key        memKey
	state      bucket
	banUntilMs int64
	prev, next int32
}

// nilSlot marks the end of a list.
const nilSlot = -1

// memShard is one lock's worth of entries. nodes is a slab of slots that
// grows to capacity and is then reused; index maps a key to its slot; the
// LRU list runs from head (most recent) to tail (eviction candidate); free
// lists slots vacated by lifted or expired bans, linked through next.
type memShard struct {
	mu sync.Mutex
	// The fields below are guarded by mu.
	index    map[memKey]int32
	nodes    []memNode
	capacity int
	head     int32
	tail     int32
	free     int32
	// bans counts the ban entries, so that the common case (no ban in
	// the shard) skips the ban lookup.
	bans int
	// pad keeps neighbouring shards' mutexes off one cache line.
	_ [64]byte
}

func (sh *memShard) init(capacity int) {
	sh.index = make(map[memKey]int32)
	sh.capacity = capacity
	sh.head, sh.tail, sh.free = nilSlot, nilSlot, nilSlot
}

// banUntilLocked reports whether key is banned at nowMs and until when. An
// expired ban is removed.
func (sh *memShard) banUntilLocked(key string, nowMs int64) (int64, bool) {
	if sh.bans == 0 {
		return 0, false
	}
	i, ok := sh.index[memKey{key: key, ban: true}]
	if !ok {
		return 0, false
	}
	until := sh.nodes[i].banUntilMs
	if until <= nowMs {
		sh.removeLocked(i)
		return 0, false
	}
	sh.touchLocked(i)
	return until, true
}

// insertLocked stores a new entry at the head of the LRU list, evicting the
// tail if the shard is full.
func (sh *memShard) insertLocked(k memKey, n memNode) {
	var i int32
	switch {
	case sh.free != nilSlot:
		i = sh.free
		sh.free = sh.nodes[i].next
	case len(sh.nodes) < sh.capacity:
		sh.nodes = append(sh.nodes, memNode{})
		i = int32(len(sh.nodes) - 1)
	default:
		i = sh.tail
		sh.unlinkLocked(i)
		delete(sh.index, sh.nodes[i].key)
		if sh.nodes[i].key.ban {
			sh.bans--
		}
	}
	if k.ban {
		sh.bans++
	}
	n.key = k
	sh.nodes[i] = n
	sh.index[k] = i
	sh.pushFrontLocked(i)
}

// removeLocked deletes entry i and puts its slot on the free list.
func (sh *memShard) removeLocked(i int32) {
	sh.unlinkLocked(i)
	delete(sh.index, sh.nodes[i].key)
	if sh.nodes[i].key.ban {
		sh.bans--
	}
	sh.nodes[i] = memNode{next: sh.free}
	sh.free = i
}

// touchLocked moves entry i to the head of the LRU list.
func (sh *memShard) touchLocked(i int32) {
	if sh.head == i {
		return
	}
	sh.unlinkLocked(i)
	sh.pushFrontLocked(i)
}

func (sh *memShard) unlinkLocked(i int32) {
	n := &sh.nodes[i]
	if n.prev != nilSlot {
		sh.nodes[n.prev].next = n.next
	} else {
		sh.head = n.next
	}
	if n.next != nilSlot {
		sh.nodes[n.next].prev = n.prev
	} else {
		sh.tail = n.prev
	}
	n.prev, n.next = nilSlot, nilSlot
}

func (sh *memShard) pushFrontLocked(i int32) {
	n := &sh.nodes[i]
	n.prev, n.next = nilSlot, sh.head
	if sh.head != nilSlot {
		sh.nodes[sh.head].prev = i
	} else {
		sh.tail = i
	}
	sh.head = i
}
