package server

import (
	"time"

	"github.com/stompgate/stompgate/broker"
)

// DeliveryObserver is an Observer that also times deliveries; the server
// checks its Observer for it. metrics.Metrics implements it.
//
// Timing costs one clock read per WebSocket write (which the writer reads
// anyway) and one per published message, however many subscribers it
// has; the arrival of a SEND is the read that brought it, which the
// connection has already timed.
type DeliveryObserver interface {
	// MessageWritten reports one MESSAGE written to a subscriber's
	// socket: path is how the message reached the server (one of
	// outcome.DeliveryPaths), latency the time from its arrival to the
	// write that put the frame on the socket (or, for a socket that did
	// not take the whole write at once, that began to), queued the part
	// of it the frame spent in the subscriber's outbound queue, from the
	// moment the broker began handing the message to its subscribers.
	MessageWritten(path string, latency, queued time.Duration)
}

// stampArrival gives m its arrival for delivery timing, when the server
// times deliveries: at is Unix nanoseconds.
func (s *Server) stampArrival(m *broker.Message, path string, at int64) {
	if s.latency != nil {
		m.SetArrival(path, at)
	}
}

// observeWritten reports the MESSAGEs among items, just written at now
// (Unix nanoseconds), to the server's DeliveryObserver, if it has one.
// Frames of other kinds, and messages without an arrival, are skipped.
func (s *session) observeWritten(items []outItem, now int64) {
	o := s.srv.latency
	if o == nil {
		return
	}
	for i := range items {
		m := items[i].msg
		if m == nil {
			continue
		}
		path, at, queued := m.Arrival()
		if at == 0 {
			continue
		}
		o.MessageWritten(path, time.Duration(max(now-at, 0)), time.Duration(max(now-queued, 0)))
	}
}
