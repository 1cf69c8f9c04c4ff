package api

import (
	"net/http"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

// Tracer records the span of a publish request; package tracing
// implements it, as it does server.Tracer.
type Tracer interface {
	// Publish starts the span of a publish to dest, the child of parent
	// (the request's traceparent header) when that is a valid
	// traceparent, else the root of a new trace. When the span is
	// sampled it returns its traceparent, which the published message
	// carries to every instance's delivery, and end, called with the
	// number of local subscribers that took the message; "" and nil when
	// it is not.
	Publish(parent, dest string) (traceparent string, end func(delivered int))
}

// publishTraced publishes through the server, in a span of its own when
// the Tracer samples the request. The span's traceparent goes first
// among the headers: Server.Publish takes the first one as the message's
// trace. The caller holds the API key, so a traceparent it sends in the
// request or among the message's headers is trusted, as a client's SEND
// is not.
func (h *handler) publishTraced(r *http.Request, dest string, headers []stompframe.Header, body []byte) (id string, delivered int) {
	if h.cfg.Tracer == nil {
		return h.cfg.Server.Publish(dest, headers, body)
	}
	tp, end := h.cfg.Tracer.Publish(r.Header.Get(broker.TraceHeader), dest)
	if end == nil {
		return h.cfg.Server.Publish(dest, headers, body)
	}
	headers = append([]stompframe.Header{{Name: broker.TraceHeader, Value: tp}}, headers...)
	id, delivered = h.cfg.Server.Publish(dest, headers, body)
	end(delivered)
	return id, delivered
}
