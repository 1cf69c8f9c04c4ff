package broker

// A Batch holds back the writes that a publisher's deliveries start, so
// that one write to a subscriber's socket carries what several frames of
// the publisher delivered to it, and no goroutine is started and woken
// per delivery. It belongs to one publishing goroutine, which calls
// Flush before it waits for input and before anything that may keep it
// long; a nil *Batch holds nothing back.
//
// Only the server runs a Batch, but it lives here because
// Subscriber.Deliver hands it on: server imports broker, so broker cannot
// name a type of server's, and an interface in its place would change
// Deliver for every Subscriber, in other packages too.
type Batch struct {
	pending []Flusher
}

// Flusher is a subscriber whose writing a Batch starts.
type Flusher interface {
	// Flush writes what the subscriber has queued, or hands it to a
	// writer of its own, without blocking on the subscriber's socket.
	Flush()
}

// MaxBatched is the most subscribers one Batch holds back. Past it a
// subscriber starts writing at once, on its own goroutine, so that a
// publisher to a large audience does not write to all of it alone.
const MaxBatched = 64

// Defer adds f to be flushed by Flush and reports whether it was taken:
// a nil or full Batch takes nothing, and the caller starts writing
// itself.
func (b *Batch) Defer(f Flusher) bool {
	if b == nil || len(b.pending) >= MaxBatched {
		return false
	}
	b.pending = append(b.pending, f)
	return true
}

// Len returns the number of subscribers held back.
func (b *Batch) Len() int {
	if b == nil {
		return 0
	}
	return len(b.pending)
}

// Flush calls Flush on every subscriber held back, in the order they were
// deferred, and empties the batch.
func (b *Batch) Flush() {
	if b == nil {
		return
	}
	for i, f := range b.pending {
		b.pending[i] = nil
		f.Flush()
	}
	b.pending = b.pending[:0]
}
