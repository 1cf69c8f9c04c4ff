package history

import (
	"encoding/binary"

	"github.com/stompgate/stompgate/internal/lenfield"
)

// FrameVersion is the first byte of a frame. The relay's plain payloads
// start with their own version (2), so a receiver tells the two apart
// by the first byte, and an instance that does not know frames drops
// them as a version it does not know instead of misreading them.
const FrameVersion = 3

// A frame is what append.lua publishes for each message: the position
// the script assigned, in front of the payload the publisher handed it.
//
//	version  1 byte, FrameVersion
//	offset   uvarint, at least 1
//	epoch    uvarint length (at most MaxEpochLen), bytes (printable ASCII)
//	payload  the rest, as the publisher sent it (the relay's signed payload)
//
// The position is not covered by the payload's signature: it is made by
// Redis, inside the script, after the publisher signed. See doc.go,
// "Trust".

// AppendFrame appends the frame of payload at pos to dst. It is what
// append.lua builds; Go code uses it for the memory path and in tests.
func AppendFrame(dst []byte, pos Position, payload []byte) []byte {
	dst = append(dst, FrameVersion)
	dst = binary.AppendUvarint(dst, pos.Offset)
	dst = binary.AppendUvarint(dst, uint64(len(pos.Epoch)))
	dst = append(dst, pos.Epoch...)
	return append(dst, payload...)
}

// IsFrame reports whether p starts like a frame (its first byte), so
// that a receiver can route it before decoding.
func IsFrame(p string) bool {
	return len(p) > 0 && p[0] == FrameVersion
}

// DecodeFrame splits a frame into its position and payload, which
// shares p's memory. ok is false for anything that is not a well-formed
// frame: wrong version, an offset of 0 or that does not fit, an epoch
// that is empty, longer than MaxEpochLen or not printable ASCII, or a
// length beyond the end. It never allocates more than the epoch's
// string header.
func DecodeFrame(p string) (pos Position, payload string, ok bool) {
	if !IsFrame(p) {
		return Position{}, "", false
	}
	d := lenfield.Reader{S: p[1:]}
	off := d.Uvarint()
	n := d.Uvarint()
	if d.Bad || off == 0 || n == 0 || n > MaxEpochLen || n > uint64(len(d.S)) {
		return Position{}, "", false
	}
	epoch := d.S[:n]
	if !ValidEpoch(epoch) {
		return Position{}, "", false
	}
	return Position{Offset: off, Epoch: epoch}, d.S[n:], true
}

// ValidEpoch reports whether e may be an epoch: 1 to MaxEpochLen
// printable ASCII bytes.
func ValidEpoch(e string) bool {
	if e == "" || len(e) > MaxEpochLen {
		return false
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
