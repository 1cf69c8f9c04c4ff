package server

import (
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

// Tracer records spans for a tracing system; package tracing implements
// it with OpenTelemetry, so that the server itself depends on none. Every
// method is called on a session's reader (or a program's Publish), from
// many goroutines at once, and must be fast and safe for concurrent use.
//
// The Tracer decides what is traced, never a client: Connect, Subscribe
// and Send start a new trace for the frames they sample, and a
// traceparent a client sends is dropped with the other reserved headers
// (broker.Reserved). A traced message carries its trace in
// broker.Message.Trace, which the relay takes to the other instances and
// AppMessage.Trace to the backend; Deliver continues it wherever the
// message is delivered. A nil end function means the frame was not
// sampled and costs nothing more.
type Tracer interface {
	// Connect starts the span of a CONNECT. end is called once the frame
	// was handled, with its result ("ok" or the label of the
	// outcome.Close that ended the session) and the session id.
	Connect() (end func(result, session string))
	// Subscribe starts the span of a SUBSCRIBE to dest; end takes the
	// result as Connect's does.
	Subscribe(dest string) (end func(result string))
	// Send decides whether a SEND to dest is traced. When it is, it
	// returns the message's traceparent and end, called once the message
	// was handed on (published, held in its transaction or given to the
	// AppHandler).
	Send(dest string) (traceparent string, end func())
	// Deliver starts the span of the delivery, on this instance, of the
	// message to dest whose Trace is traceparent; end is called once it
	// was handed to the local subscribers. It returns a function even
	// when it records nothing.
	Deliver(traceparent, dest string) (end func())
}

// Frame results a Tracer's end functions take besides close reasons.
const (
	// TraceOK: the frame was handled and the session goes on.
	TraceOK = "ok"
	// TraceEnded: the frame ended the session without a close reason.
	TraceEnded = "ended"
)

// handleTraced is handle, in the span of f when the Tracer samples it.
// Without a Tracer it costs a nil check; a SEND, the frame that counts,
// is traced in onSend, where its message is.
func (s *session) handleTraced(f *stompframe.Frame, now time.Time) bool {
	if s.srv.cfg.Tracer == nil || f.Command == stompframe.CommandSend {
		return s.handle(f, now)
	}
	end := s.traceFrame(f)
	ended := s.handle(f, now)
	end(ended)
	return ended
}

// noFrameTrace is traceFrame's answer for a frame it does not trace.
func noFrameTrace(bool) {}

// noSendTrace is traceSend's answer for a message it does not trace.
func noSendTrace() {}

// traceFrame starts the span of f when the Tracer samples it and returns
// the function that ends it with handle's answer.
func (s *session) traceFrame(f *stompframe.Frame) func(ended bool) {
	t := s.srv.cfg.Tracer
	switch f.Command {
	case stompframe.CommandConnect, stompframe.CommandStomp:
		if end := t.Connect(); end != nil {
			return func(ended bool) { end(s.frameResult(ended), s.st.ID) }
		}
	case stompframe.CommandSubscribe:
		if end := t.Subscribe(f.Get("destination")); end != nil {
			return func(ended bool) { end(s.frameResult(ended)) }
		}
	}
	return noFrameTrace
}

// frameResult is a traced frame's result: TraceOK, or why it ended the
// session.
func (s *session) frameResult(ended bool) string {
	if !ended {
		return TraceOK
	}
	if r := s.box.closeReason(); r != nil {
		return r.String()
	}
	return TraceEnded
}

// traceSend asks the Tracer whether m, a SEND, is traced and, when it
// is, gives m its trace. It returns the function that ends the span.
func (s *Server) traceSend(m *broker.Message) func() {
	tp, end := s.cfg.Tracer.Send(m.Destination)
	if end == nil {
		return noSendTrace
	}
	m.Trace = tp
	return end
}

// adoptTrace gives m, published by the program, the first valid
// traceparent among its headers, when the server traces at all.
func (s *Server) adoptTrace(m *broker.Message, headers []stompframe.Header) {
	if s.cfg.Tracer == nil {
		return
	}
	for _, h := range headers {
		if h.Name == broker.TraceHeader {
			if broker.ValidTrace(h.Value) {
				m.Trace = h.Value
			}
			return
		}
	}
}
