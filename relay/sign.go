package relay

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"
	"unsafe"

	"github.com/stompgate/stompgate/internal/lenfield"
)

// MinKeyLen is the shortest key a Signer takes, in bytes: HMAC-SHA256
// gives its full strength with a key at least as long as its 32-byte
// output (RFC 2104 section 3), and a shorter shared secret is more likely
// a password than a random key.
const MinKeyLen = 32

// macLen is the length of an HMAC-SHA256 tag.
const macLen = sha256.Size

// The flags byte that starts an envelope.
const (
	envUnsigned byte = 0
	envSigned   byte = 1
)

// Signer seals and opens the messages instances send each other through
// Redis (relayed topic messages, disconnect requests) with a key they
// share. An envelope is
//
//	flags      1 byte: 0 unsigned, 1 signed
//	mac        32 bytes, only when signed: HMAC-SHA256 of the key over
//	           everything after it
//	timestamp  uvarint: the sender's clock, Unix milliseconds
//	payload    the rest
//
// A nil *Signer has no key: it seals unsigned envelopes and opens every
// envelope without checking it, so anything with write access to Redis can
// publish to the instances. With a key, Open refuses an unsigned envelope,
// a wrong mac, and a timestamp more than MaxAge away from the receiver's
// clock (which bounds how long a captured message can be replayed).
//
// A Signer is safe for concurrent use.
type Signer struct {
	key    []byte
	maxAge time.Duration
	pool   sync.Pool // of *macState
}

// macState is an HMAC-SHA256 keyed with a Signer's key and room for one
// tag, reused so that sealing and opening allocate nothing.
type macState struct {
	h   hash.Hash
	sum [macLen]byte
}

// NewSigner returns a Signer for key, which must be at least MinKeyLen
// bytes, refusing envelopes older or newer than maxAge; maxAge zero means
// DefaultMaxAge, negative is an error. An empty key returns nil: the
// Signer of a deployment without a key.
func NewSigner(key string, maxAge time.Duration) (*Signer, error) {
	if key == "" {
		return nil, nil
	}
	if len(key) < MinKeyLen {
		return nil, configErrorf("Key is %d bytes, want at least %d (for example 32 random bytes, hex or base64 encoded)", len(key), MinKeyLen)
	}
	if maxAge < 0 {
		return nil, configErrorf("MaxAge %v is negative", maxAge)
	}
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	s := &Signer{key: []byte(key), maxAge: maxAge}
	s.pool.New = func() any { return &macState{h: hmac.New(sha256.New, s.key)} }
	return s, nil
}

// Seal appends to dst the envelope of payload sent at now.
func (s *Signer) Seal(dst, payload []byte, now time.Time) []byte {
	dst, start := s.begin(dst, now)
	dst = append(dst, payload...)
	return s.finish(dst, start)
}

// begin appends an envelope's flags, room for its mac and its timestamp;
// the caller appends the payload and calls finish with start.
func (s *Signer) begin(dst []byte, now time.Time) (_ []byte, start int) {
	if s == nil {
		dst = append(dst, envUnsigned)
		return binary.AppendUvarint(dst, uint64(now.UnixMilli())), len(dst)
	}
	dst = append(dst, envSigned)
	start = len(dst)
	dst = append(dst, make([]byte, macLen)...)
	return binary.AppendUvarint(dst, uint64(now.UnixMilli())), start
}

// finish writes the mac of the envelope begun at start.
func (s *Signer) finish(dst []byte, start int) []byte {
	if s == nil {
		return dst
	}
	m := s.pool.Get().(*macState)
	m.h.Reset()
	m.h.Write(dst[start+macLen:])
	copy(dst[start:], m.h.Sum(m.sum[:0]))
	s.pool.Put(m)
	return dst
}

// Open checks the envelope p received at now and returns its payload, or
// the reason it is refused: DropMalformed, DropUnsigned, DropBadSignature
// or DropStale. A nil Signer checks only the envelope's shape.
func (s *Signer) Open(p string, now time.Time) (payload string, reason string) {
	return s.openWithin(p, now, 0)
}

// openWithin is Open with the age bound maxAge instead of the Signer's
// MaxAge when maxAge is positive: a message replayed from a history is
// as old as the history.
func (s *Signer) openWithin(p string, now time.Time, maxAge time.Duration) (payload string, reason string) {
	if len(p) == 0 {
		return "", DropMalformed
	}
	flags := p[0]
	d := lenfield.Reader{S: p[1:]}
	var mac string
	switch flags {
	case envUnsigned:
		if s != nil {
			return "", DropUnsigned
		}
	case envSigned:
		if len(d.S) < macLen {
			return "", DropMalformed
		}
		mac, d.S = d.S[:macLen], d.S[macLen:]
	default:
		return "", DropMalformed
	}
	signed := d.S
	ts := d.Uvarint()
	if d.Bad {
		return "", DropMalformed
	}
	if s == nil {
		return d.S, ""
	}
	if !s.verify(signed, mac) {
		return "", DropBadSignature
	}
	if maxAge <= 0 {
		maxAge = s.maxAge
	}
	if age := now.Sub(time.UnixMilli(int64(ts))); age > maxAge || age < -s.maxAge {
		return "", DropStale
	}
	return d.S, ""
}

// verify reports whether mac is the HMAC of signed.
func (s *Signer) verify(signed, mac string) bool {
	m := s.pool.Get().(*macState)
	m.h.Reset()
	// The payload arrives as a string; hashing it through a read-only
	// view saves copying up to MaxPayload bytes per message. Write and
	// Equal neither keep nor change their arguments.
	m.h.Write(bytesOf(signed))
	ok := hmac.Equal(m.h.Sum(m.sum[:0]), bytesOf(mac))
	s.pool.Put(m)
	return ok
}

// bytesOf returns a read-only view of s.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
