// Package lenfield reads the fields of the wire formats instances
// exchange through Redis (the relay's payloads, history's frames):
// unsigned varints (encoding/binary's) and strings prefixed by one.
// Reading past a malformed field is safe: the first error marks the
// Reader bad and every read after it returns a zero value, so a decoder
// reads all its fields and checks Bad once.
package lenfield

import "encoding/binary"

// Reader reads fields from S, which shrinks as they are read. The zero
// value reads nothing (the first read marks it bad). A Reader is not
// safe for concurrent use.
type Reader struct {
	// S is what is left to read.
	S string
	// Bad is set by the first read that failed: a varint longer than
	// binary.MaxVarintLen64 or overflowing 64 bits, or a length beyond
	// the end of S.
	Bad bool
}

// Uvarint reads an unsigned varint, or returns 0 with Bad set.
func (r *Reader) Uvarint() uint64 {
	if r.Bad {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; i < len(r.S) && i < binary.MaxVarintLen64; i++ {
		c := r.S[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // the tenth byte would overflow 64 bits
			}
			r.S = r.S[i+1:]
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.Bad = true
	return 0
}

// String reads a string prefixed by its length as a varint, sharing S's
// memory, or returns "" with Bad set.
func (r *Reader) String() string {
	n := r.Uvarint()
	if r.Bad || n > uint64(len(r.S)) {
		r.Bad = true
		return ""
	}
	s := r.S[:n]
	r.S = r.S[n:]
	return s
}
