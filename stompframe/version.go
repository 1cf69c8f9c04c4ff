package stompframe

import (
	"strconv"
	"strings"
)

// Version is a STOMP protocol version. It decides how header values are
// escaped (see the package documentation). The zero Version is not a valid
// protocol version.
type Version uint8

// The protocol versions this package speaks.
const (
	V10 Version = 10 // STOMP 1.0: no header escaping.
	V11 Version = 11 // STOMP 1.1: \n, \c and \\ escapes.
	V12 Version = 12 // STOMP 1.2: \r, \n, \c and \\ escapes.
)

// String returns "1.0", "1.1" or "1.2", the form used in the
// accept-version and version headers, or "Version(N)" for other values.
func (v Version) String() string {
	switch v {
	case V10:
		return "1.0"
	case V11:
		return "1.1"
	case V12:
		return "1.2"
	}
	return "Version(" + strconv.Itoa(int(v)) + ")"
}

// Subprotocol returns the WebSocket subprotocol name of v ("v12.stomp"),
// or "" for an unsupported version.
func (v Version) Subprotocol() string {
	switch v {
	case V10:
		return "v10.stomp"
	case V11:
		return "v11.stomp"
	case V12:
		return "v12.stomp"
	}
	return ""
}

// Subprotocols returns the WebSocket subprotocols this package supports,
// most preferred first, for a server to offer during the handshake.
func Subprotocols() []string {
	return []string{"v12.stomp", "v11.stomp", "v10.stomp"}
}

// ParseVersion parses a version as written in the accept-version and
// version headers ("1.0", "1.1", "1.2"). ok is false for anything else.
func ParseVersion(s string) (v Version, ok bool) {
	switch s {
	case "1.0":
		return V10, true
	case "1.1":
		return V11, true
	case "1.2":
		return V12, true
	}
	return 0, false
}

// Negotiate picks the highest version listed in an accept-version header
// value ("1.0,1.1,1.2") that this package supports. Spaces around the
// entries are ignored, and so are versions it does not know. An empty
// value means V10, because STOMP 1.0 clients do not send the header. ok is
// false when none of the listed versions is supported; the server then
// answers with an ERROR frame listing its versions (STOMP 1.2, Protocol
// Negotiation).
func Negotiate(acceptVersion string) (v Version, ok bool) {
	if strings.TrimSpace(acceptVersion) == "" {
		return V10, true
	}
	rest := acceptVersion
	for rest != "" {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		if pv, ok := ParseVersion(strings.TrimSpace(item)); ok && pv > v {
			v = pv
		}
	}
	return v, v != 0
}

// SubprotocolVersion maps a WebSocket subprotocol ("v12.stomp",
// "v11.stomp", "v10.stomp") to its Version. ok is false for any other
// name, including "" (no subprotocol negotiated).
func SubprotocolVersion(proto string) (Version, bool) {
	switch proto {
	case "v10.stomp":
		return V10, true
	case "v11.stomp":
		return V11, true
	case "v12.stomp":
		return V12, true
	}
	return 0, false
}
