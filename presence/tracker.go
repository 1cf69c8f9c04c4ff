package presence

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Defaults, applied by New to a zero field where noted.
const (
	// DefaultMaxMembers is the most members one presence frame lists: a
	// 1,000-member snapshot is about 40 KB of JSON with short names, within
	// the default outbound bounds of a session, and a bigger room is
	// rarely shown member by member.
	DefaultMaxMembers = 1000
	// DefaultTimeout bounds each call to the store: a snapshot waits on
	// the subscribing session's reader, so it must stay short, and 2 s
	// reads a 1,000-member room from a Redis busy with a failover.
	DefaultTimeout = 2 * time.Second
)

// ErrNotEnabled is Watch's answer for a destination no rule enables
// presence for.
var ErrNotEnabled = errors.New("presence: not enabled for this destination")

// ErrClosed is Watch's answer after Close.
var ErrClosed = errors.New("presence: tracker closed")

// Observer counts what a Tracker does; every method must be cheap and
// safe for concurrent use. Labels come from package outcome.
type Observer interface {
	// Event counts one join or leave received for a watched destination.
	Event(op Op)
	// Frame counts one presence frame (kind outcome.PresenceSnapshot or
	// outcome.PresenceDelta) handed to a watcher.
	Frame(kind string)
	// Truncated counts a snapshot that listed fewer members than it
	// counted (Config.MaxMembers bit).
	Truncated()
	// StoreError counts a store call that failed.
	StoreError()
}

// Config configures a Tracker. The zero value works: memory store, no
// destination enabled.
type Config struct {
	// Store holds the membership. Nil: a new MemoryStore, for one
	// instance.
	Store Store
	// Enabled reports whether dest keeps presence (a policy rule's
	// presence switch). Nil: no destination does.
	Enabled func(dest string) bool
	// Grace is how long a member whose last session ended stays, so that
	// a reconnect within it is neither a leave nor a join. 0 or
	// negative: it leaves at once.
	Grace time.Duration
	// Batch is how long the joins and leaves of a destination are
	// gathered into one frame per watcher. 0 or negative: a frame per
	// store delivery.
	Batch time.Duration
	// MaxMembers is the most members a snapshot lists (Count still counts
	// all) and the most events one delta frame carries. 0 or negative:
	// DefaultMaxMembers.
	MaxMembers int
	// Timeout bounds each store call. 0 or negative: DefaultTimeout.
	Timeout time.Duration
	// Observer counts; nil counts nothing.
	Observer Observer
	// Logger logs store failures; nil means slog.Default().
	Logger *slog.Logger
}

// Tracker is one instance's presence: the members its sessions make (by
// principal, with a grace period), written to a Store, and the watchers
// of destinations, who get a snapshot and then batched deltas. It is safe
// for concurrent use.
type Tracker struct {
	cfg Config

	// mu guards local, dirty, queue, dests and closed. Store calls never
	// run under it.
	mu     sync.Mutex
	local  map[memberKey]*localMember
	dirty  map[memberKey]struct{} // in queue
	queue  []memberKey            // changed members, oldest first
	dests  map[string]*watched
	closed bool
	// failing is set while store writes fail, so that the Warn is
	// logged once.
	failing bool

	wake chan struct{} // 1-buffered: dirty has entries
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

// memberKey names one principal in one destination.
type memberKey struct{ dest, principal string }

// localMember is this instance's share of a member.
type localMember struct {
	sessions int    // open sessions here
	info     string // the first session's info
	held     bool   // counts as present: sessions > 0 or within the grace period
	grace    *time.Timer
	stored   int // the session count the store has; 0 none
}

// want is the session count the store should have for m.
func (m *localMember) want() int {
	switch {
	case m.sessions > 0:
		return m.sessions
	case m.held:
		return max(m.stored, 1)
	}
	return 0
}

// New returns a Tracker; Close stops it.
func New(cfg Config) *Tracker {
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Enabled == nil {
		cfg.Enabled = func(string) bool { return false }
	}
	if cfg.MaxMembers <= 0 {
		cfg.MaxMembers = DefaultMaxMembers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Tracker{
		cfg:   cfg,
		local: make(map[memberKey]*localMember),
		dirty: make(map[memberKey]struct{}),
		dests: make(map[string]*watched),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	cfg.Store.Attach(t.deliver)
	t.wg.Add(1)
	go t.writeLoop()
	return t
}

// Enabled reports whether dest keeps presence.
func (t *Tracker) Enabled(dest string) bool { return t.cfg.Enabled(dest) }

// Join adds one session of principal to dest's members, with info, and
// returns what removes it, to be called once. ok is false, and leave nil,
// when dest does not keep presence. A principal's first session makes it
// a member (one OpJoin across instances); later ones only count.
func (t *Tracker) Join(dest, principal, info string) (leave func(), ok bool) {
	if !t.cfg.Enabled(dest) {
		return nil, false
	}
	k := memberKey{dest, principal}
	t.mu.Lock()
	m := t.local[k]
	if m == nil {
		m = &localMember{info: info}
		t.local[k] = m
	}
	m.sessions++
	m.held = true
	if m.grace != nil {
		m.grace.Stop()
		m.grace = nil
	}
	t.markLocked(k)
	t.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { t.leave(k) }) }, true
}

// leave removes one session of k; the last one starts the grace period.
func (t *Tracker) leave(k memberKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.local[k]
	if m == nil {
		return
	}
	m.sessions--
	if m.sessions > 0 {
		t.markLocked(k)
		return
	}
	if t.cfg.Grace <= 0 || t.closed {
		m.held = false
		t.markLocked(k)
		return
	}
	m.grace = time.AfterFunc(t.cfg.Grace, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if m.sessions == 0 && t.local[k] == m {
			m.held, m.grace = false, nil
			t.markLocked(k)
		}
	})
}

// markLocked queues k for the writer.
func (t *Tracker) markLocked(k memberKey) {
	if _, ok := t.dirty[k]; !ok {
		t.dirty[k] = struct{}{}
		t.queue = append(t.queue, k)
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what changed to the store, one member at a time, in
// one goroutine so that the writes of one member never pass each other.
// A member that joined and left before its turn costs nothing.
func (t *Tracker) writeLoop() {
	defer t.wg.Done()
	for {
		select {
		case <-t.wake:
		case <-t.done:
			return
		}
		for {
			k, m, want, ok := t.nextDirty()
			if !ok {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
			err := t.cfg.Store.Set(ctx, k.dest, k.principal, want, m.info)
			cancel()
			t.mu.Lock()
			was := t.failing
			t.failing = err != nil
			if err != nil {
				// Written again after a pause, with whatever changed
				// meanwhile; a store that refuses at once is not
				// hammered.
				t.markLocked(k)
			} else {
				m.stored = want
			}
			if !m.held && m.stored == 0 && t.local[k] == m {
				delete(t.local, k)
			}
			t.mu.Unlock()
			switch {
			case err != nil && !was:
				t.cfg.Logger.Warn("presence: store writes failing; retrying", "destination", k.dest, "error", err)
			case err == nil && was:
				t.cfg.Logger.Info("presence: store writes recovered")
			}
			if err != nil {
				t.cfg.Observer.StoreError()
				select {
				case <-time.After(retryPause):
				case <-t.done:
					return
				}
			}
		}
	}
}

// retryPause is how long the writer waits after a failed store write
// before the next: a second lets a Redis failover finish without a
// write per member per millisecond against a refusing server, and
// members catch up within a second of its return.
const retryPause = time.Second

// nextDirty takes the oldest changed member whose store count differs
// from what it should be: members are written in the order they changed.
func (t *Tracker) nextDirty() (memberKey, *localMember, int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.queue) > 0 {
		k := t.queue[0]
		t.queue[0] = memberKey{}
		t.queue = t.queue[1:]
		delete(t.dirty, k)
		m := t.local[k]
		if m == nil {
			continue
		}
		if want := m.want(); want != m.stored {
			return k, m, want, true
		}
		if !m.held && m.stored == 0 {
			delete(t.local, k)
		}
	}
	return memberKey{}, nil, 0, false
}

// Members reads dest's membership from the store, listing at most
// Config.MaxMembers.
func (t *Tracker) Members(ctx context.Context, dest string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	return t.cfg.Store.Snapshot(ctx, dest, t.cfg.MaxMembers)
}

// Close stops the writer and every timer. Members this instance still
// holds stay in the store (a shared store removes them as it removes a
// dead instance's); it is idempotent.
func (t *Tracker) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	close(t.done)
	for _, m := range t.local {
		if m.grace != nil {
			m.grace.Stop()
		}
	}
	for _, d := range t.dests {
		d.stopTimer()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

type nopObserver struct{}

func (nopObserver) Event(Op)     {}
func (nopObserver) Frame(string) {}
func (nopObserver) Truncated()   {}
func (nopObserver) StoreError()  {}
