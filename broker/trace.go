package broker

// TraceHeader is the name of the W3C Trace Context header
// (https://www.w3.org/TR/trace-context/#traceparent-header) that carries
// a traced message's Trace between instances and to the backend. It is
// reserved: a client's SEND cannot set it, so a client cannot make the
// server trace, and spend on, the messages it chooses.
const TraceHeader = "traceparent"

// ValidTrace reports whether tp is a traceparent of version 00 as W3C
// Trace Context defines it: "00-", a trace id of 32 lowercase hex
// digits, not all zero, "-", a parent id of 16, not all zero, "-" and 2
// for the flags: 55 bytes in all. Anything else is not a Trace: a relay
// drops it rather than hand it to a tracer.
func ValidTrace(tp string) bool {
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	traceID, parentID, flags := tp[3:35], tp[36:52], tp[53:]
	return lowerHex(traceID) && lowerHex(parentID) && lowerHex(flags) &&
		traceID != "00000000000000000000000000000000" && parentID != "0000000000000000"
}

// lowerHex reports whether s is made of lowercase hex digits only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
