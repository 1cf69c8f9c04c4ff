package stompframe

import "strconv"

// Append appends the wire form of f to dst and returns the extended slice:
// the command, the headers (escaped per v unless v is V10 or the command is
// CONNECT, STOMP or CONNECTED), a blank line, the body and a NUL. It does
// not add a content-length header; a caller sending a body that may
// contain NUL adds one (see AppendContentLength). Append allocates nothing
// when dst has room.
//
// Some values cannot be written in every version: a 1.0 header cannot
// hold LF, CR or a colon in its name, a 1.1 header cannot hold CR.
// AppendHeader writes them as spaces (a 1.0 name's colon as an
// underscore), so a value relayed from a 1.2 client can neither add
// headers to an older peer's frame nor make its parser reject it. The
// headers of CONNECT, STOMP and CONNECTED in 1.1 and 1.2 are written raw;
// the caller supplies them.
func Append(dst []byte, f *Frame, v Version) []byte {
	dst = append(dst, f.Command...)
	dst = append(dst, '\n')
	esc := v < V11 || escapes(v, f.Command)
	for _, h := range f.Headers {
		if esc {
			dst = AppendHeader(dst, h.Name, h.Value, v)
		} else {
			dst = AppendHeaderRaw(dst, h.Name, h.Value)
		}
	}
	dst = append(dst, '\n')
	dst = append(dst, f.Body...)
	return append(dst, 0)
}

// AppendHeader appends one header line "name:value\n" with name and value
// escaped as version v requires, for callers that compose frames without
// building a Frame. For CONNECT, STOMP and CONNECTED frames, whose headers
// are never escaped, use AppendHeaderRaw.
func AppendHeader(dst []byte, name, value string, v Version) []byte {
	dst = appendEscaped(dst, name, v, true)
	dst = append(dst, ':')
	dst = appendEscaped(dst, value, v, false)
	return append(dst, '\n')
}

// AppendHeaderRaw appends one header line "name:value\n" without escaping.
func AppendHeaderRaw(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	dst = append(dst, value...)
	return append(dst, '\n')
}

// AppendContentLength appends the header line "content-length:n\n" without
// allocating.
func AppendContentLength(dst []byte, n int) []byte {
	dst = append(dst, "content-length:"...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\n')
}

// AppendHeartBeat appends one heart-beat EOL (STOMP 1.2, Heart-beating).
func AppendHeartBeat(dst []byte) []byte {
	return append(dst, '\n')
}
