package presence

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// watched is one destination with watchers on this instance.
type watched struct {
	dest string

	// mu guards the fields below and orders everything sent to the
	// destination's watchers: a snapshot and the deltas after it.
	mu       sync.Mutex
	watchers map[*watcher]struct{}
	started  bool    // the first watcher's snapshot set last
	last     uint64  // the Seq of the newest event taken
	pending  []Event // taken, not yet sent
	gap      bool    // an event was missed: send a fresh snapshot
	timer    *time.Timer
}

// watcher is one watch: a session's presence subscription.
type watcher struct {
	send  func(body []byte) bool
	seq   uint64 // the newest Seq it has
	ready bool   // its snapshot is sent; until then flushes pass it by
}

// stopTimer stops the batch timer. Caller holds the Tracker's mu.
func (d *watched) stopTimer() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.mu.Unlock()
}

// Watch subscribes send to dest's presence: it first gets the snapshot
// frame, then delta frames that continue its seq with no gap, or a fresh
// snapshot frame when events were missed (see doc.go for the JSON). send
// runs on the caller's goroutine for the first snapshot and on the
// Tracker's for the rest, never two at a time for one watch; it must not
// block. stop ends the watch, to be called once.
func (t *Tracker) Watch(dest string, send func(body []byte) bool) (stop func(), err error) {
	if !t.cfg.Enabled(dest) {
		return nil, ErrNotEnabled
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	d := t.dests[dest]
	first := d == nil
	if first {
		d = &watched{dest: dest, watchers: make(map[*watcher]struct{})}
		t.dests[dest] = d
	}
	w := &watcher{send: send}
	// Counted in before the snapshot, so that a concurrent stop of the
	// last other watcher keeps d. It gets nothing before its snapshot:
	// its seq is 0 until then, and flushes skip it (see flushLocked).
	d.mu.Lock()
	d.watchers[w] = struct{}{}
	d.mu.Unlock()
	t.mu.Unlock()
	if first {
		t.cfg.Store.Watched(dest, true)
	}

	d.mu.Lock()
	snap, err := t.snapshot(dest)
	if err != nil {
		d.mu.Unlock()
		t.unwatch(d, w)
		return nil, err
	}
	w.seq, w.ready = snap.Seq, true
	if !d.started {
		// The first snapshot sets where the events continue. Later
		// ones leave it: events up to their seq still in flight go to
		// the older watchers, and this one passes them by (w.seq).
		d.started, d.last = true, snap.Seq
	}
	t.sendLocked(w, outcome.PresenceSnapshot, encodeSnapshot(dest, snap))
	d.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { t.unwatch(d, w) }) }, nil
}

// snapshot reads dest's snapshot within the store timeout.
func (t *Tracker) snapshot(dest string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	snap, err := t.cfg.Store.Snapshot(ctx, dest, t.cfg.MaxMembers)
	if err != nil {
		t.cfg.Observer.StoreError()
		return Snapshot{}, err
	}
	if len(snap.Members) < snap.Count {
		t.cfg.Observer.Truncated()
	}
	return snap, nil
}

// unwatch removes w, and d with its last watcher.
func (t *Tracker) unwatch(d *watched, w *watcher) {
	d.mu.Lock()
	delete(d.watchers, w)
	d.mu.Unlock()
	t.mu.Lock()
	d.mu.Lock()
	gone := len(d.watchers) == 0 && t.dests[d.dest] == d
	if gone {
		delete(t.dests, d.dest)
		if d.timer != nil {
			d.timer.Stop()
			d.timer = nil
		}
	}
	d.mu.Unlock()
	t.mu.Unlock()
	if gone {
		t.cfg.Store.Watched(d.dest, false)
	}
}

// deliver takes a store's events for dest, in Seq order.
func (t *Tracker) deliver(dest string, events []Event) {
	t.mu.Lock()
	d := t.dests[dest]
	closed := t.closed
	t.mu.Unlock()
	if d == nil || closed {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.started {
		return // the first snapshot, read after these, holds them
	}
	for _, ev := range events {
		if ev.Op == OpSync {
			if ev.Seq > d.last {
				d.gap = true
			}
			continue
		}
		if ev.Seq <= d.last {
			continue // already in a snapshot
		}
		if ev.Seq != d.last+1 {
			d.gap = true
		}
		d.last = ev.Seq
		d.pending = append(d.pending, ev)
		t.cfg.Observer.Event(ev.Op)
	}
	if len(d.pending) == 0 && !d.gap {
		return
	}
	if t.cfg.Batch <= 0 {
		t.flushLocked(d)
		return
	}
	if d.timer == nil {
		d.timer = time.AfterFunc(t.cfg.Batch, func() { t.flush(d) })
	}
}

// flush sends what d gathered.
func (t *Tracker) flush(d *watched) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	t.flushLocked(d)
}

// flushLocked sends d's pending events to each watcher, in frames of at
// most Config.MaxMembers events, or a fresh snapshot after a gap. Caller
// holds d.mu.
func (t *Tracker) flushLocked(d *watched) {
	pending := d.pending
	d.pending = nil
	if d.gap {
		d.gap = false
		snap, err := t.snapshot(d.dest)
		if err != nil {
			// The next event finds the gap again.
			d.gap = true
			return
		}
		d.last = max(d.last, snap.Seq)
		body := encodeSnapshot(d.dest, snap)
		for w := range d.watchers {
			if !w.ready {
				continue
			}
			w.seq = snap.Seq
			t.sendLocked(w, outcome.PresenceSnapshot, body)
		}
		return
	}
	// Most watchers are at the same position: encode each frame once
	// for them, and apart only for one that joined mid-batch.
	var shared [][]byte
	var sharedFrom uint64
	if len(pending) > 0 {
		sharedFrom = pending[0].Seq - 1
	}
	for w := range d.watchers {
		if !w.ready {
			continue
		}
		evs := pending
		for len(evs) > 0 && evs[0].Seq <= w.seq {
			evs = evs[1:]
		}
		if len(evs) == 0 {
			continue
		}
		var frames [][]byte
		if w.seq == sharedFrom {
			if shared == nil {
				shared = t.encodeDeltas(d.dest, evs)
			}
			frames = shared
		} else {
			frames = t.encodeDeltas(d.dest, evs)
		}
		for _, f := range frames {
			t.sendLocked(w, outcome.PresenceDelta, f)
		}
		w.seq = evs[len(evs)-1].Seq
	}
}

// sendLocked hands body to w and counts it.
func (t *Tracker) sendLocked(w *watcher, kind string, body []byte) {
	if w.send(body) {
		t.cfg.Observer.Frame(kind)
	}
}

// snapshotJSON is a snapshot frame's body.
type snapshotJSON struct {
	Type        string   `json:"type"`
	Destination string   `json:"destination"`
	Seq         uint64   `json:"seq"`
	Count       int      `json:"count"`
	Members     []Member `json:"members"`
}

// deltaJSON is a delta frame's body.
type deltaJSON struct {
	Type        string  `json:"type"`
	Destination string  `json:"destination"`
	Seq         uint64  `json:"seq"`
	Events      []Event `json:"events"`
}

func encodeSnapshot(dest string, s Snapshot) []byte {
	ms := s.Members
	if ms == nil {
		ms = []Member{}
	}
	b, _ := json.Marshal(snapshotJSON{Type: outcome.PresenceSnapshot, Destination: dest, Seq: s.Seq, Count: s.Count, Members: ms})
	return b
}

// encodeDeltas splits evs into delta frames of at most MaxMembers events.
func (t *Tracker) encodeDeltas(dest string, evs []Event) [][]byte {
	var out [][]byte
	for len(evs) > 0 {
		n := min(len(evs), t.cfg.MaxMembers)
		b, _ := json.Marshal(deltaJSON{Type: outcome.PresenceDelta, Destination: dest, Seq: evs[n-1].Seq, Events: evs[:n]})
		out = append(out, b)
		evs = evs[n:]
	}
	return out
}
