package history

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of ReaderConfig.
const (
	// DefaultInterval is the least time between two reads of one
	// destination's history by one Reader: a thousand clients
	// resubscribing to a room after a deploy cost at most ten reads a
	// second, and a client waits at most this long (plus the read) for
	// a read that began after it subscribed.
	DefaultInterval = 100 * time.Millisecond
	// DefaultMaxFlights bounds the destinations a Reader tracks at once
	// (reads in flight, scheduled, or kept for Interval after they end):
	// a few hundred rooms recovering within one interval is a whole
	// fleet's deploy. A read past it goes to the store alone,
	// uncoalesced, and is counted. A snapshot is held for Interval
	// after its read, so a Reader holds at most MaxFlights snapshots of
	// MaxRecovery entries at once, and none once recoveries stop.
	DefaultMaxFlights = 1024
)

// ReaderConfig configures a Reader. Store is required.
type ReaderConfig struct {
	// Store is where histories are read (Tail).
	Store Store
	// Interval is the least time between the starts of two reads of one
	// destination. Zero means DefaultInterval; negative is an error.
	Interval time.Duration
	// MaxRecovery is the most messages one recovery replays (the
	// -recovery-max setting), and so the length of each read. Zero
	// means DefaultMaxRecovery; negative or above MaxKeep is an error.
	MaxRecovery int
	// MaxFlights bounds the destinations tracked at once. Zero means
	// DefaultMaxFlights; negative is an error.
	MaxFlights int
	// Now is the clock that times reads, which Since compares with its
	// subscribed argument: the caller must take that from the same
	// clock. Nil means time.Now. The waits between reads are real
	// timers.
	Now func() time.Time
}

// Reader answers recoveries, sharing history reads between the
// subscriptions of one destination: concurrent callers whose
// subscriptions began before a read started share that read, and reads
// of one destination start at most once per Interval, one at a time. So
// a thundering herd of N subscriptions to one room costs one read per
// interval, not N.
//
// A read is shared only with callers whose subscriptions began before
// it started (Since's subscribed argument): a read that began earlier
// could miss a message published between the two, which the caller's
// live registration would not hold either.
//
// A Reader is safe for concurrent use. Close waits for its reads.
type Reader struct {
	store    Store
	interval time.Duration
	max      int
	maxFl    int
	now      func() time.Time

	// mu guards flights and closed.
	mu      sync.Mutex
	flights map[string]*destFlights
	closed  bool
	stop    chan struct{}  // closed by Close: reads stop waiting
	wg      sync.WaitGroup // reads in flight

	reads       atomic.Uint64
	shared      atomic.Uint64
	uncoalesced atomic.Uint64
	failed      atomic.Uint64
}

// destFlights is one destination's latest read and the one waiting to
// start.
type destFlights struct {
	last *flight // the latest read started; nil before the first
	next *flight // scheduled after last, not yet started
}

// flight is one read of a destination's history.
type flight struct {
	start time.Time     // when the read started (set before done opens)
	done  chan struct{} // closed when snap and err are set
	snap  Snapshot
	err   error
}

// NewReader returns a Reader configured by cfg.
func NewReader(cfg ReaderConfig) (*Reader, error) {
	if cfg.Store == nil {
		return nil, configErrorf("ReaderConfig.Store is nil")
	}
	if cfg.Interval < 0 {
		return nil, configErrorf("ReaderConfig.Interval %v is negative", cfg.Interval)
	}
	if cfg.MaxRecovery < 0 || cfg.MaxRecovery > MaxKeep {
		return nil, configErrorf("ReaderConfig.MaxRecovery %d is outside 0..%d", cfg.MaxRecovery, MaxKeep)
	}
	if cfg.MaxFlights < 0 {
		return nil, configErrorf("ReaderConfig.MaxFlights %d is negative", cfg.MaxFlights)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxRecovery == 0 {
		cfg.MaxRecovery = DefaultMaxRecovery
	}
	if cfg.MaxFlights == 0 {
		cfg.MaxFlights = DefaultMaxFlights
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reader{
		store:    cfg.Store,
		interval: cfg.Interval,
		max:      cfg.MaxRecovery,
		maxFl:    cfg.MaxFlights,
		now:      cfg.Now,
		flights:  make(map[string]*destFlights),
		stop:     make(chan struct{}),
	}, nil
}

// Since answers the recovery of a subscription to dest, registered for
// live messages at subscribed, that asked for start: Since(snapshot,
// start, MaxRecovery) on a snapshot read at or after subscribed. A read
// that fails, or that ctx ends before, gives Recovered false with
// ReasonUnavailable, and the error. StartNext needs no replay but still
// reads, for the position live delivery continues from.
func (r *Reader) Since(ctx context.Context, dest string, ret Retention, start Start, subscribed time.Time) (Result, error) {
	f, err := r.join(dest, ret, subscribed)
	if err != nil {
		return Result{Reason: ReasonUnavailable}, err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return Result{Reason: ReasonUnavailable}, ctx.Err()
	}
	if f.err != nil {
		return Result{Reason: ReasonUnavailable}, f.err
	}
	return Since(f.snap, start, r.max), nil
}

// join returns a read of dest that starts at or after subscribed: the
// latest if it qualifies, else the scheduled one, else a new one.
func (r *Reader) join(dest string, ret Retention, subscribed time.Time) (*flight, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	now := r.now()
	d := r.flights[dest]
	if d == nil {
		if len(r.flights) >= r.maxFl {
			r.sweepLocked(now)
		}
		if len(r.flights) >= r.maxFl {
			r.uncoalesced.Add(1)
			f := &flight{done: make(chan struct{})}
			r.fly(dest, ret, f, nil, now)
			return f, nil
		}
		d = &destFlights{}
		r.flights[dest] = d
	}
	if d.last != nil && !d.last.start.Before(subscribed) {
		r.shared.Add(1)
		return d.last, nil
	}
	if d.next != nil {
		r.shared.Add(1)
		return d.next, nil
	}
	f := &flight{done: make(chan struct{})}
	prev := d.last
	d.next = f
	at := now
	if prev != nil {
		at = prev.start.Add(r.interval)
	}
	r.fly(dest, ret, f, prev, at)
	return f, nil
}

// fly starts f's read at or after at, once prev (if any) is done; r.mu
// is held.
func (r *Reader) fly(dest string, ret Retention, f, prev *flight, at time.Time) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if prev != nil {
			<-prev.done
		}
		r.sleep(at.Sub(r.now()))
		r.mu.Lock()
		f.start = r.now()
		if d := r.flights[dest]; d != nil && d.next == f {
			d.last, d.next = f, nil
		}
		r.mu.Unlock()
		r.reads.Add(1)
		f.snap, f.err = r.store.Tail(context.Background(), dest, r.max, ret)
		if f.err != nil {
			r.failed.Add(1)
		}
		close(f.done)
		// Keep the snapshot for late joiners for Interval, then let it
		// go: what a Reader holds is bounded in time as well as count.
		r.sleep(r.interval)
		r.mu.Lock()
		if d := r.flights[dest]; d != nil && d.last == f && d.next == nil {
			delete(r.flights, dest)
		}
		r.mu.Unlock()
	}()
}

// sleep waits for d, or until Close.
func (r *Reader) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.stop:
	}
}

// sweepLocked forgets destinations whose latest read ended more than
// Interval ago and that have none scheduled; r.mu is held.
func (r *Reader) sweepLocked(now time.Time) {
	for dest, d := range r.flights {
		if d.next != nil || d.last == nil {
			continue
		}
		select {
		case <-d.last.done:
			if now.Sub(d.last.start) >= r.interval {
				delete(r.flights, dest)
			}
		default:
		}
	}
}

// Close refuses new recoveries, starts scheduled reads at once and waits
// for the reads under way, each bounded by the store's own timeout. It
// is idempotent.
func (r *Reader) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// ReaderStats counts what a Reader did.
type ReaderStats struct {
	// Reads counts reads sent to the store.
	Reads uint64
	// Shared counts recoveries answered by a read another recovery
	// started or that was already under way.
	Shared uint64
	// Uncoalesced counts reads made alone because MaxFlights
	// destinations were tracked.
	Uncoalesced uint64
	// Failed counts reads that failed.
	Failed uint64
}

// Stats returns the reader's counters.
func (r *Reader) Stats() ReaderStats {
	return ReaderStats{
		Reads:       r.reads.Load(),
		Shared:      r.shared.Load(),
		Uncoalesced: r.uncoalesced.Load(),
		Failed:      r.failed.Load(),
	}
}
