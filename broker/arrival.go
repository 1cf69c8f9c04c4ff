package broker

import "time"

// SetArrival records how and when m reached the server: path is one of
// outcome.DeliveryPaths, at the Unix nanoseconds of its arrival (the end
// of the read that brought it, where there was one). A server that times
// its deliveries (server.DeliveryObserver) observes the time from then to
// the write of each MESSAGE; a message without an arrival is not timed.
// Call it before m is published.
func (m *Message) SetArrival(path string, at int64) {
	m.path, m.arrived = path, at
}

// Arrival returns what SetArrival recorded, and the Unix nanoseconds at
// which Publish began handing m to its subscribers' queues: at and queued
// are 0 for a message that was never given an arrival.
func (m *Message) Arrival() (path string, at, queued int64) {
	return m.path, m.arrived, m.queued
}

// KeepArrival gives m, a message built from from for the same delivery
// (with other headers, or to another destination), from's arrival and
// queueing times, and returns m.
func (m *Message) KeepArrival(from *Message) *Message {
	m.path, m.arrived, m.queued = from.path, from.arrived, from.queued
	return m
}

// stampQueued records, for a message with an arrival, when Publish began
// handing it to subscribers: one clock read per message, whatever its
// audience. A message is published once.
func (m *Message) stampQueued() {
	if m.arrived != 0 {
		m.queued = time.Now().UnixNano()
	}
}
