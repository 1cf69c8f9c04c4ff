package server

import (
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Publish sends a message from the program (a backend, the HTTP API) to
// every subscriber of dest on this instance and, through Config.Relay, on
// the others. No client limit applies. headers are passed through as a
// SEND's would be (the server's own, such as destination and
// content-length, are ignored); headers and body are copied. A valid
// broker.TraceHeader among headers becomes the message's trace when the
// server has a Config.Tracer: the program is trusted to choose what is
// traced, a client is not (see Tracer). It returns
// the message id and the number of local subscribers that took it. An
// empty dest publishes nothing and returns an empty id.
func (s *Server) Publish(dest string, headers []stompframe.Header, body []byte) (id string, delivered int) {
	if dest == "" {
		return "", 0
	}
	f := stompframe.Frame{Command: stompframe.CommandSend, Headers: make([]stompframe.Header, 0, len(headers)+1), Body: body}
	f.Add("destination", dest)
	// Positions and recovery outcomes are the server's to set:
	// NewMessage drops them with the other reserved headers.
	f.Headers = append(f.Headers, headers...)
	m := broker.NewMessage(s.cfg.Broker.NextID(), &f)
	s.adoptTrace(m, headers)
	if s.latency != nil {
		s.stampArrival(m, outcome.DeliveryAPI, time.Now().UnixNano())
	}
	return m.ID, s.deliver(m, nil)
}

// deliver hands m to the relay and the local broker and counts it, or,
// for a destination with history, to the history's log, which delivers
// it with its position. b is the publishing reader's batch, nil for the
// program's own messages.
func (s *Server) deliver(m *broker.Message, b *broker.Batch) int {
	if m.Trace != "" && s.cfg.Tracer != nil {
		defer s.cfg.Tracer.Deliver(m.Trace, m.Destination)()
	}
	if r, ok := s.historyOf(m.Destination); ok {
		n, _ := s.cfg.History.Log.Append(m, r)
		s.cfg.Observer.Delivered(m.Destination, n)
		return n
	}
	if s.cfg.Relay != nil {
		s.cfg.Relay.Publish(m)
	}
	n := s.cfg.Broker.PublishBatch(m, b)
	s.cfg.Observer.Delivered(m.Destination, n)
	return n
}
