package tracing

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/stompgate/stompgate/broker"
)

// traceparent formats sc as a W3C traceparent of version 00, in one
// allocation.
func traceparent(sc trace.SpanContext) string {
	var b [55]byte
	tid, sid, flags := sc.TraceID(), sc.SpanID(), [1]byte{byte(sc.TraceFlags())}
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], flags[:])
	return string(b[:])
}

// parent parses a traceparent (broker.ValidTrace) into the remote span
// context it names; false when tp is not one.
func parent(tp string) (trace.SpanContext, bool) {
	if !broker.ValidTrace(tp) {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(tp[3:35])
	sid, err2 := trace.SpanIDFromHex(tp[36:52])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	flags := trace.TraceFlags(unhex(tp[53])<<4 | unhex(tp[54]))
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: flags & trace.FlagsSampled, Remote: true,
	}), true
}

// unhex is the value of a lowercase hex digit (ValidTrace checked it).
func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}
