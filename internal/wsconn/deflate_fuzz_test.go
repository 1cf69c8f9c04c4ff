package wsconn

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// FuzzInflate checks inflate against compress/flate read directly: it
// never holds more than limit+1 bytes; what it returns whole is what the
// reference decodes; too big only when the reference makes more than
// limit bytes; not deflate only when the reference fails too or bytes
// follow a final block.
func FuzzInflate(f *testing.F) {
	f.Add(AppendDeflated(nil, []byte("hello, world"), 1), uint16(100))
	f.Add(AppendDeflated(nil, bytes.Repeat([]byte("a"), 5000), 9), uint16(4000))
	f.Add(finalBlockOf("final"), uint16(10))
	f.Add([]byte{0x00}, uint16(1))
	f.Add([]byte{0xff, 0xff, 0xff}, uint16(50))
	f.Fuzz(func(t *testing.T, p []byte, limitSel uint16) {
		limit := 1 + int(limitSel)
		out := new([]byte)
		err := inflate(out, p, limit)
		if len(*out) > limit+1 || cap(*out) > max(limit+1, ReadBufferSize) {
			t.Fatalf("inflate held len %d cap %d under a limit of %d", len(*out), cap(*out), limit)
		}
		ref := flate.NewReader(io.MultiReader(bytes.NewReader(p), bytes.NewReader(deflateTail[:])))
		want, refErr := io.ReadAll(io.LimitReader(ref, int64(limit)+1))
		refOK := refErr == nil || errors.Is(refErr, io.ErrUnexpectedEOF)
		switch {
		case err == nil:
			if len(want) > limit || !refOK || !bytes.Equal(*out, want) {
				t.Fatalf("inflate = %s, reference %s (%v)", short(*out), short(want), refErr)
			}
		case errors.Is(err, ErrMessageTooBig):
			if len(want) <= limit {
				t.Fatalf("inflate: too big, reference made %d bytes under %d (%v)", len(want), limit, refErr)
			}
		case err == errBadDeflate:
			// The reference fails too, or inflate saw bytes after a
			// final block that the reference ignores.
		default:
			t.Fatalf("inflate: unexpected error %v", err)
		}
	})
}

// FuzzDeflateReader feeds a connection that negotiated permessage-deflate
// arbitrary client bytes, whole and split in two: no panic, no message
// over the limit, every text message UTF-8, the same reading either way.
func FuzzDeflateReader(f *testing.F) {
	msg := AppendDeflated(nil, []byte("SEND\ndestination:/topic/chat\n\nhello\x00"), 1)
	f.Add(clientFrame(finBit|rsv1Bit|fText, msg), uint16(3), uint16(1000))
	f.Add(append(clientFrame(rsv1Bit|fBinary, msg[:4]), clientFrame(finBit|fCont, msg[4:])...), uint16(9), uint16(1000))
	f.Add(clientFrame(finBit|rsv1Bit|fText, AppendDeflated(nil, make([]byte, 1<<16), 1)), uint16(20), uint16(100))
	f.Add(clientFrame(finBit|rsv1Bit|fPing, nil), uint16(1), uint16(10))
	f.Fuzz(func(t *testing.T, in []byte, split, limitSel uint16) {
		limit := 1 + int(limitSel)
		at := int(split) % (len(in) + 1)
		var first []message
		for i, chunks := range [][][]byte{{in}, {in[:at], in[at:]}} {
			c := newConn(&fuzzConn{chunks: chunks}, "")
			c.z = newCompression(CompressionOptions{})
			c.SetReadLimit(limit)
			var got []message
			for range len(in) + 2 {
				typ, p, err := c.ReadMessage()
				if err != nil {
					break
				}
				if len(p) > limit {
					t.Fatalf("a message of %d bytes under a limit of %d", len(p), limit)
				}
				if typ == MessageText && !utf8.Valid(p) {
					t.Fatalf("text message %s is not UTF-8", short(p))
				}
				got = append(got, message{typ, bytes.Clone(p)})
			}
			_ = c.CloseNow()
			if i == 0 {
				first = got
				continue
			}
			if len(got) != len(first) {
				t.Fatalf("split at %d: %d messages, whole: %d", at, len(got), len(first))
			}
			for j := range got {
				if got[j].typ != first[j].typ || !bytes.Equal(got[j].p, first[j].p) {
					t.Fatalf("split at %d: message %d differs", at, j)
				}
			}
		}
	})
}

// finalBlockOf is a deflate stream of s ending with a final block.
func finalBlockOf(s string) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}
