package stompframe

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3/frame"
)

// send100 returns a SEND frame as stomp.js sends it: destination,
// content-type, content-length, one user header and a 100-byte body.
func send100() []byte {
	body := strings.Repeat("b", 100)
	return []byte("SEND\ndestination:/topic/room.42\ncontent-type:text/plain\ncontent-length:100\nx-user:alice\n\n" + body + "\x00")
}

func send100Frame() *Frame {
	return &Frame{
		Command: CommandSend,
		Headers: []Header{
			{"destination", "/topic/room.42"},
			{"content-type", "text/plain"},
			{"content-length", "100"},
			{"x-user", "alice"},
		},
		Body: bytes.Repeat([]byte("b"), 100),
	}
}

// BenchmarkDecodeSEND100 decodes one 100-byte SEND per WebSocket message,
// with this package's Decoder and, as the reference, go-stomp's
// frame.Reader (which needs an io.Reader per message).
func BenchmarkDecodeSEND100(b *testing.B) {
	msg := send100()
	b.Run("stompframe", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		d := NewDecoder(Limits{})
		for b.Loop() {
			d.Feed(msg)
			f, err := d.Next()
			if err != nil || f == nil {
				b.Fatalf("Next() = %v, %v", f, err)
			}
			if f, err := d.Next(); f != nil || err != nil {
				b.Fatalf("Next() = %v, %v, want nil, nil", f, err)
			}
		}
	})
	b.Run("stompframe/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		b.RunParallel(func(pb *testing.PB) {
			d := NewDecoder(Limits{})
			for pb.Next() {
				d.Feed(msg)
				if f, err := d.Next(); err != nil || f == nil {
					b.Errorf("Next() = %v, %v", f, err)
					return
				}
				d.Next()
			}
		})
	})
	b.Run("stompframe/split", func(b *testing.B) {
		// The frame arrives in two messages, cut inside the body: the
		// Decoder copies the first part into its buffer.
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		d := NewDecoder(Limits{})
		half := len(msg) - 50
		for b.Loop() {
			d.Feed(msg[:half])
			if f, err := d.Next(); f != nil || err != nil {
				b.Fatalf("Next() = %v, %v, want nil, nil", f, err)
			}
			d.Feed(msg[half:])
			if f, err := d.Next(); err != nil || f == nil {
				b.Fatalf("Next() = %v, %v", f, err)
			}
			d.Next()
		}
	})
	b.Run("go-stomp", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			f, err := frame.NewReader(bytes.NewReader(msg)).Read()
			if err != nil || f == nil {
				b.Fatalf("Read() = %v, %v", f, err)
			}
		}
	})
}

// BenchmarkEncodeSEND100 encodes the same SEND with Append into a reused
// buffer and, as the reference, with go-stomp's frame.Writer.
func BenchmarkEncodeSEND100(b *testing.B) {
	f := send100Frame()
	b.Run("stompframe", func(b *testing.B) {
		b.ReportAllocs()
		dst := Append(nil, f, V12)
		b.SetBytes(int64(len(dst)))
		for b.Loop() {
			dst = Append(dst[:0], f, V12)
		}
	})
	b.Run("stompframe/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var dst []byte
			for pb.Next() {
				dst = Append(dst[:0], f, V12)
			}
		})
	})
	b.Run("go-stomp", func(b *testing.B) {
		b.ReportAllocs()
		gf := frame.New(f.Command)
		for _, h := range f.Headers {
			gf.Header.Add(h.Name, h.Value)
		}
		gf.Body = f.Body
		for b.Loop() {
			if err := frame.NewWriter(io.Discard).Write(gf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
