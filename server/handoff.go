package server

import "github.com/stompgate/stompgate/broker"

// A session's writer may be handed to a publisher's batch (broker.Batch),
// which starts it when that publisher's reader is about to wait. Until
// then the session counts as written to, and every other publisher's
// MESSAGE for it only joins its queue. Should the holding reader stop
// before it flushes (the machine does not run its thread, or the Go
// scheduler preempts it and queues it behind thousands of readers), every
// session its batch holds would wait with it: measured on a shared
// 2-core machine, that hand-off was where most of the slowest 1 % of
// deliveries waited.
//
// So a start held by one batch and not yet claimed is handed to the next
// publisher that delivers to the session as well, and whichever of the
// batches flushes first claims it and writes for all; the others' Flush
// finds nothing to claim. The writer is still counted once in writers,
// and at most one writer runs. A publisher stuck in the middle of its
// writes now holds up only the session it is writing to.

// deferLocked decides, with mu held, whether b, the batch of the
// publisher whose push it follows, takes the start of the writer: when
// the push started it (start) and b has room, or when another batch
// holds the start and no one has claimed it. It reports whether the
// caller is to call b.Defer; a push that started the writer and is not
// deferred starts a writer goroutine.
func (o *outbox) deferLocked(start bool, b *broker.Batch) bool {
	switch {
	case b == nil || b.Len() >= broker.MaxBatched:
		return false
	case start:
		o.deferred, o.deferredTo = true, b
		return true
	case o.deferred && o.deferredTo != b:
		o.deferredTo = b
		return true
	}
	return false
}

// claim takes the writer's start for the batch flushing now, and reports
// false when there was none to take: another batch flushed first, and
// its writer ran or runs.
func (o *outbox) claim() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.deferred {
		return false
	}
	o.deferred, o.deferredTo = false, nil
	return true
}
