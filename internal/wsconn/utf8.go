package wsconn

import "unicode/utf8"

// checkUTF8 checks the bytes of the text message being assembled that
// arrived since the last check, and reports whether they can still be
// part of a UTF-8 text: an invalid byte fails at once, while a character
// cut short at the end waits for its next bytes, which may come in the
// next fragment.
func (c *Conn) checkUTF8() bool {
	n, ok := validPrefix((*c.msg)[c.utf8Done:])
	c.utf8Done += n
	return ok
}

// validPrefix returns the length of the longest start of b made of whole
// UTF-8 characters, and whether the bytes after it (at most three) are
// the start of a character cut short rather than invalid.
func validPrefix(b []byte) (n int, ok bool) {
	if utf8.Valid(b) {
		return len(b), true
	}
	for n < len(b) {
		if b[n] < utf8.RuneSelf {
			n++
			continue
		}
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size == 1 {
			// FullRune counts an invalid sequence as whole: it is false
			// only for a valid start cut short.
			return n, !utf8.FullRune(b[n:])
		}
		n += size
	}
	return n, true
}
