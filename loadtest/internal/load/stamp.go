package load

// A published body starts with a stamp: 'T', the send time as 16 hex
// digits of nanoseconds since the run's clock base, and the publisher's
// index as 8 hex digits. The rest, up to the body size, is padding. Fixed
// width keeps encoding and decoding free of allocation; the clock base is
// a monotonic time.Time of this process, so a wall-clock step cannot skew
// latencies.
const StampLen = 1 + 16 + 8

const hexDigits = "0123456789abcdef"

// appendStamp appends the stamp of a message sent at ns by publisher pub.
func appendStamp(dst []byte, ns int64, pub uint32) []byte {
	dst = append(dst, 'T')
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(uint64(ns)>>shift)&0xf])
	}
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(pub>>shift)&0xf])
	}
	return dst
}

// parseStamp reads the stamp at the start of body; ok is false when body
// does not start with one (a message from someone else).
func parseStamp(body []byte) (ns int64, pub uint32, ok bool) {
	if len(body) < StampLen || body[0] != 'T' {
		return 0, 0, false
	}
	var t uint64
	for _, c := range body[1:17] {
		v, ok := unhex(c)
		if !ok {
			return 0, 0, false
		}
		t = t<<4 | uint64(v)
	}
	for _, c := range body[17:StampLen] {
		v, ok := unhex(c)
		if !ok {
			return 0, 0, false
		}
		pub = pub<<4 | uint32(v)
	}
	return int64(t), pub, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
