package load

import (
	"bytes"
	"io"
	"testing"

	gostompframe "github.com/go-stomp/stomp/v3/frame"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/stompframe"
)

// batchFrames is how many frames one benchmark message carries: about
// what a publisher packs into one WebSocket message at 100-byte bodies.
const batchFrames = 32

// BenchmarkBuildBatch builds one WebSocket message of SEND frames the way
// a publisher does; its peer is go-stomp's frame.Writer writing the same
// frames.
func BenchmarkBuildBatch(b *testing.B) {
	b.Run("loadtest", func(b *testing.B) {
		p := NewPublisher(&client.Conn{Version: stompframe.V12}, &Class{}, 7, "/topic/loadtest.throughput", 100)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			buf := p.conn.WriteBuf[:0]
			for range batchFrames {
				buf = append(buf, p.prefix...)
				buf = appendStamp(buf, int64(i), p.idx)
				buf = append(buf, p.pad...)
				buf = append(buf, 0)
			}
			p.conn.WriteBuf = buf
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchFrames), "ns/frame")
	})
	b.Run("go-stomp-writer", func(b *testing.B) {
		w := gostompframe.NewWriter(io.Discard)
		body := bytes.Repeat([]byte{'x'}, 100)
		b.ReportAllocs()
		for b.Loop() {
			for range batchFrames {
				f := gostompframe.New("SEND", "destination", "/topic/loadtest.throughput")
				f.Body = body
				_ = w.Write(f)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchFrames), "ns/frame")
	})
}

// messageBatch is one server message of MESSAGE frames as wsserver
// writes them.
func messageBatch() []byte {
	var out []byte
	for i := range batchFrames {
		f := stompframe.Frame{Command: stompframe.CommandMessage}
		f.Add("destination", "/topic/loadtest.throughput")
		f.Add("message-id", "ABCDEFGH-"+string(rune('a'+i%26)))
		f.Add("subscription", "0")
		f.Add("content-length", "100")
		body := appendStamp(nil, int64(i)*1000, 3)
		f.Body = append(body, bytes.Repeat([]byte{'x'}, 100-len(body))...)
		out = stompframe.Append(out, &f, stompframe.V12)
	}
	return out
}

// BenchmarkReadBatch decodes one server message of MESSAGE frames and
// records each latency, as a subscriber does; its peer is go-stomp's
// frame.Reader on the same bytes.
func BenchmarkReadBatch(b *testing.B) {
	msg := messageBatch()
	b.Run("loadtest", func(b *testing.B) {
		dec := stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: client.ReadLimit})
		h := report.NewHistogram()
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			dec.Feed(msg)
			for {
				f, err := dec.Next()
				if err != nil {
					b.Fatal(err)
				}
				if f == nil {
					break
				}
				if ts, _, ok := parseStamp(f.Body); ok {
					report.RecordMicros(h, 50_000-ts/1000)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchFrames), "ns/frame")
	})
	b.Run("go-stomp-reader", func(b *testing.B) {
		r := bytes.NewReader(msg)
		fr := gostompframe.NewReader(r)
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			r.Reset(msg)
			for range batchFrames {
				if _, err := fr.Read(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchFrames), "ns/frame")
	})
}
