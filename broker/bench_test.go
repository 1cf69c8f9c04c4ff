package broker

import (
	"bytes"
	"strconv"
	"testing"

	gostomp "github.com/go-stomp/stomp/v3/frame"

	"github.com/stompgate/stompgate/stompframe"
)

// Benchmarks of one SEND fanned out to 1 and to 100 subscribers, with the
// work the server's writer does per subscriber: encoding the MESSAGE frame
// into a reused buffer. The reference is go-stomp's frame.Writer encoding
// the same MESSAGE for each subscriber (BenchmarkPublishGoStompWriter).

// encoder is a Subscriber that encodes each message into its own buffer,
// reset every time, as the server's writer goroutine does.
type encoder struct {
	buf []byte
	n   int
}

func (e *encoder) Deliver(sub *Subscription, m *Message, _ *Batch) bool {
	e.buf = m.AppendFrame(e.buf[:0], sub)
	e.n += len(e.buf)
	return true
}

// benchFrame is a chat SEND as stomp.js sends it, with a 100-byte body.
func benchFrame() *stompframe.Frame {
	return send(string(bytes.Repeat([]byte("x"), 100)),
		"destination", "/topic/room.42",
		"content-type", "application/json",
		"content-length", "100",
		"receipt", "r-7",
	)
}

func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("subs="+strconv.Itoa(n), func(b *testing.B) {
			br := New()
			for i := range n {
				sub := NewSubscription("sub-"+strconv.Itoa(i), "/topic/room.42", AckAuto, stompframe.V12, &encoder{})
				br.Subscribe(sub)
			}
			f := benchFrame()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if got := br.Publish(NewMessage(br.NextID(), f)); got != n {
					b.Fatalf("Publish delivered %d, want %d", got, n)
				}
			}
		})
	}
}

// BenchmarkPublishMixedVersions fans out to 100 subscribers spread over
// the three STOMP versions, so the message is encoded three times.
func BenchmarkPublishMixedVersions(b *testing.B) {
	br := New()
	versions := []stompframe.Version{stompframe.V10, stompframe.V11, stompframe.V12}
	for i := range 100 {
		sub := NewSubscription("sub-"+strconv.Itoa(i), "/topic/room.42", AckClientIndividual, versions[i%3], &encoder{})
		br.Subscribe(sub)
	}
	f := benchFrame()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		br.Publish(NewMessage(br.NextID(), f))
	}
}

// goStompEncoder encodes with go-stomp's frame.Writer into a reused
// buffer.
type goStompEncoder struct {
	buf bytes.Buffer
	w   *gostomp.Writer
}

// BenchmarkPublishGoStompWriter is the reference: per SEND, one MESSAGE
// frame built and encoded with go-stomp for each subscriber.
func BenchmarkPublishGoStompWriter(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("subs="+strconv.Itoa(n), func(b *testing.B) {
			subs := make([]*goStompEncoder, n)
			for i := range subs {
				subs[i] = &goStompEncoder{}
				subs[i].w = gostomp.NewWriter(&subs[i].buf)
			}
			br := New()
			body := bytes.Repeat([]byte("x"), 100)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				id := br.NextID()
				for i, s := range subs {
					f := gostomp.New("MESSAGE",
						"subscription", "sub-"+strconv.Itoa(i),
						"destination", "/topic/room.42",
						"message-id", id,
						"content-type", "application/json",
					)
					f.Body = body
					s.buf.Reset()
					if err := s.w.Write(f); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkNewMessage100 builds a message from a SEND with a 100-byte body.
func BenchmarkNewMessage100(b *testing.B) {
	br := New()
	f := benchFrame()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		NewMessage(br.NextID(), f)
	}
}

func BenchmarkNextID(b *testing.B) {
	br := New()
	b.ReportAllocs()
	for range b.N {
		br.NextID()
	}
}

func BenchmarkNextIDParallel(b *testing.B) {
	br := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			br.NextID()
		}
	})
}
