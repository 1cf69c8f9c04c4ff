package handshake

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// DefaultShedKeys is the default Config.ShedKeys. A key is remembered only
// while Redis's refusal of it lasts (a Retry-After: under a second at the
// default 3 r/s, a ban's length for a banned key) or while it has decisions
// on their way to Redis: 100,000 keys are 100,000 addresses flooding at
// once, about 10 MB, as many as the MemoryStore keeps.
const DefaultShedKeys = 100_000

// Why the Limiter answered without Redis although Redis is not judged
// failing, as reported in Result.Local. They are also suitable as a
// bounded metrics label.
const (
	// LocalRefused: refused without asking, because Redis refused the key
	// within the last Retry-After it gave (Result.Store StoreLocal).
	LocalRefused = outcome.LocalRefused
	// LocalInFlight: refused without asking, because the key already has
	// Config.MaxInFlightPerKey decisions on their way to Redis
	// (Result.Store StoreLocal).
	LocalInFlight = outcome.LocalInFlight
	// LocalQueueFull: the Redis queue was full (ErrQueueFull).
	LocalQueueFull = outcome.LocalQueueFull
	// LocalQueueWait: the decision waited RedisConfig.MaxQueueWait
	// without being sent (ErrQueueWait).
	LocalQueueWait = outcome.LocalQueueWait
	// LocalTimeout: the decision's round trip failed (timed out, mostly)
	// but Redis is not judged failing (RedisConfig.TimeoutsToFail).
	//
	// These three are decided in Memory (Result.Store StoreMemory) for a
	// key Memory holds no state for and with no other decision on its
	// way, and otherwise refused (Store StoreLocal): a key that floods
	// gets no admission Redis did not give.
	LocalTimeout = outcome.LocalTimeout
)

const (
	// shedShards spreads the shed table over independently locked parts,
	// as the MemoryStore does.
	shedShards = 64
	// shedSweepEvery is how often, at most, a full shard looks for keys
	// it no longer needs: a flood of new keys into a full table costs a
	// walk of the shard (about 1,600 entries) at most this often.
	shedSweepEvery = 100 * time.Millisecond
)

// shedTable remembers, per key, what makes a decision for it pointless to
// send to Redis: a refusal that still holds, and how many of its decisions
// are on their way. It is bounded: a key is kept only while either holds,
// and at most maxKeys at once. Safe for concurrent use.
type shedTable struct {
	// maxInFlight is Config.MaxInFlightPerKey: 0 means the limit's
	// Burst+1, negative no bound.
	maxInFlight int
	seed        maphash.Seed
	shards      [shedShards]shedShard
}

type shedShard struct {
	mu sync.Mutex
	// keys, max and swept are guarded by mu.
	keys map[string]shedEntry
	max  int
	// swept is when (Unix ns) the shard last looked for keys to drop.
	swept int64
}

// shedEntry is one key's state.
type shedEntry struct {
	// inFlight counts the key's decisions on their way to Redis.
	inFlight int
	// until (Unix ns) ends the refusal Redis gave; banned says it was a
	// ban.
	until  int64
	banned bool
}

func newShedTable(maxKeys, maxInFlight int) *shedTable {
	t := &shedTable{maxInFlight: maxInFlight, seed: maphash.MakeSeed()}
	per := max((maxKeys+shedShards-1)/shedShards, 1)
	for i := range t.shards {
		t.shards[i].keys = make(map[string]shedEntry)
		t.shards[i].max = per
	}
	return t
}

func (t *shedTable) shard(key string) *shedShard {
	return &t.shards[maphash.String(t.seed, key)%shedShards]
}

// acquire decides whether a decision for key under l at now may go to
// Redis. It answers shed true with the refusal to give when not; else it
// counts the decision in flight when tracked is true, and the caller must
// call release. A full table leaves a new key untracked (tracked false):
// its decision goes to Redis unshed.
func (t *shedTable) acquire(key string, l Limit, now time.Time) (r Result, shed, tracked bool) {
	ns := now.UnixNano()
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.keys[key]
	if !ok && len(sh.keys) >= sh.max && !sh.sweepLocked(ns) {
		return Result{}, false, false
	}
	if ns < e.until {
		return Result{RetryAfter: ceilMs(time.Duration(e.until - ns)), Store: StoreLocal, Banned: e.banned, Local: LocalRefused}, true, false
	}
	limit := t.maxInFlight
	if limit == 0 {
		limit = l.Burst + 1
	}
	if limit > 0 && e.inFlight >= limit {
		return Result{RetryAfter: drip(l), Store: StoreLocal, Local: LocalInFlight}, true, false
	}
	e.inFlight++
	sh.keys[key] = e
	return Result{}, false, true
}

// release ends a decision for key that acquire let through at start, and
// remembers a refusal that Redis gave (err nil, r refused): until start +
// RetryAfter − 1 ms, every decision for key is refused without asking.
// start is no later than the moment Redis decided, and Redis truncates its
// clock to the millisecond, so the local refusal ends no later than
// Redis's: every request refused this way is one Redis would refuse too,
// unless the key's ban is lifted early on another instance. It returns how
// many other decisions for key are still on their way.
func (t *shedTable) release(key string, start time.Time, r Result, err error) (others int) {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[key]
	e.inFlight--
	ns := start.UnixNano()
	if err == nil && !r.Allowed && r.Store == StoreRedis {
		if until := ns + int64(r.RetryAfter-time.Millisecond); until > e.until {
			e.until, e.banned = until, r.Banned
		}
	}
	if e.inFlight <= 0 && e.until <= ns {
		delete(sh.keys, key)
		return 0
	}
	sh.keys[key] = e
	return e.inFlight
}

// forget drops what the table knows of key's refusal (a ban was lifted).
func (t *shedTable) forget(key string) {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.keys[key]; ok {
		e.until, e.banned = 0, false
		sh.keys[key] = e
	}
}

// sweepLocked drops the keys with nothing in flight whose refusal ended,
// unless the shard did so within shedSweepEvery, and reports whether room
// was made.
func (sh *shedShard) sweepLocked(ns int64) bool {
	if ns-sh.swept < int64(shedSweepEvery) {
		return false
	}
	sh.swept = ns
	for k, e := range sh.keys {
		if e.inFlight <= 0 && e.until <= ns {
			delete(sh.keys, k)
		}
	}
	return len(sh.keys) < sh.max
}

// drip is the time l's bucket takes to drain one request: the Retry-After
// of a refusal made without knowing the bucket.
func drip(l Limit) time.Duration {
	return time.Duration((1_000_000+l.Rate-1)/l.Rate) * time.Millisecond
}

// ceilMs rounds d up to whole milliseconds, at least 1 ms, as every
// RetryAfter is.
func ceilMs(d time.Duration) time.Duration {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(ms, 1) * time.Millisecond
}
