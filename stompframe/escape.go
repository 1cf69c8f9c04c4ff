package stompframe

import "strings"

// escapes reports whether headers of a frame with this command are escaped
// in version v. STOMP 1.2 (Value Encoding): CONNECT and CONNECTED frames
// are exempt so that 1.0 peers can read them; STOMP is an alias of CONNECT.
func escapes(v Version, command string) bool {
	if v < V11 {
		return false
	}
	switch command {
	case CommandConnect, CommandStomp, CommandConnected:
		return false
	}
	return true
}

// checkEscapes verifies that every backslash in b starts an escape sequence
// defined in version v (v is V11 or V12). It returns the offset of the first
// bad backslash, or -1.
func checkEscapes(b []byte, v Version) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 == len(b) {
			return i
		}
		switch b[i+1] {
		case '\\', 'n', 'c':
		case 'r':
			if v < V12 {
				return i
			}
		default:
			return i
		}
		i++
	}
	return -1
}

// unescape decodes the escape sequences of s, which checkEscapes accepted.
// It returns s itself when there is nothing to decode.
func unescape(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)-1)
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 'c':
				c = ':'
			default: // '\\'
				c = s[i]
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// appendEscaped appends s, a header name when name is set or else a
// value, to dst as version v writes it. STOMP 1.2 escapes backslash, LF,
// colon and CR; 1.1 all but CR; 1.0 none. What a version cannot escape is
// written as a space, keeping the length (and, in a 1.0 name, a colon as
// an underscore): a raw LF or CR would end the line and let a value
// relayed from a 1.2 client add headers to the frame, or make a 1.1
// peer's parser reject it, and a colon in a 1.0 name would move where the
// value starts.
func appendEscaped(dst []byte, s string, v Version, name bool) []byte {
	// Most names and values hold none of the four bytes that need care.
	i := plainPrefix(s)
	if i == len(s) {
		return append(dst, s...)
	}
	start := 0
	for ; i < len(s); i++ {
		var esc byte
		switch c := s[i]; {
		case c == '\\' && v >= V11:
			esc = '\\'
		case c == '\n' && v >= V11:
			esc = 'n'
		case c == ':' && v >= V11:
			esc = 'c'
		case c == '\r' && v >= V12:
			esc = 'r'
		case c == '\n', c == '\r':
			dst = append(dst, s[start:i]...)
			dst = append(dst, ' ')
			start = i + 1
			continue
		case c == ':' && name:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '_')
			start = i + 1
			continue
		default:
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, '\\', esc)
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// special marks the bytes appendEscaped may change: backslash, LF, colon
// and CR.
var special = [256]bool{'\\': true, '\n': true, ':': true, '\r': true}

// plainPrefix returns the length of the longest prefix of s with no
// special byte. It looks at eight bytes at a time while none of them is
// special, then byte by byte.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if hasByte(x, '\\') || hasByte(x, '\n') || hasByte(x, ':') || hasByte(x, '\r') {
			break
		}
	}
	for i < len(s) && !special[s[i]] {
		i++
	}
	return i
}

// hasByte reports whether any of the eight bytes of x is b: x^(b in every
// byte) then has a zero byte, and subtracting one from every byte borrows
// into the top bit of the first zero one.
func hasByte(x uint64, b byte) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	y := x ^ (ones * uint64(b))
	return (y-ones)&^y&tops != 0
}

// EscapedLen returns the length of s as appendEscaped writes it for v:
// each byte v escapes takes two.
func EscapedLen(s string, v Version) int {
	n := len(s)
	if v < V11 {
		return n
	}
	for i := plainPrefix(s); i < len(s); i++ {
		switch s[i] {
		case '\\', '\n', ':':
			n++
		case '\r':
			if v >= V12 {
				n++
			}
		}
	}
	return n
}
