package wsconn

import (
	"bytes"
	"compress/flate"
	"fmt"
	"strings"
	"testing"
)

// chatFrame is a STOMP MESSAGE carrying a 440-byte chat JSON body, as a
// chat room delivers it; stateFrame one carrying a 4 KB game state.
var (
	chatFrame  = []byte("MESSAGE\ndestination:/topic/chat.lobby\nsubscription:0\nmessage-id:7f3a-1042\ncontent-type:application/json\n\n" + chatBody(440) + "\x00")
	stateFrame = []byte("MESSAGE\ndestination:/topic/game.42.state\nsubscription:0\nmessage-id:7f3a-1043\ncontent-type:application/json\n\n" + stateBody(4096) + "\x00")
)

func chatBody(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"from":"player%d","text":"gg, rematch in room %d? bring the blue team","at":%d}`, i%9, 40+i%3, 1764230400+i)
	}
	return b.String()[:n]
}

func stateBody(n int) string {
	var b strings.Builder
	b.WriteString(`{"tick":1042,"players":[`)
	for i := 0; b.Len() < n-2; i++ {
		fmt.Fprintf(&b, `{"id":%d,"x":%d.%d,"y":%d.%d,"hp":%d,"team":"%s"},`, i, i*37%800, i%10, i*53%600, i%7, 100-i%40, []string{"red", "blue"}[i%2])
	}
	return b.String()[:n-2] + "]}"
}

// BenchmarkAppendDeflated is the cost of one shared compressed encoding
// (once per broadcast in the default mode), and the size it reaches; the
// context-takeover variant is what each connection pays per message with
// ContextTakeover, after the 50 messages before it.
func BenchmarkAppendDeflated(b *testing.B) {
	for _, f := range []struct {
		name string
		p    []byte
	}{{"chat440", chatFrame}, {"state4k", stateFrame}} {
		b.Run(f.name+"/per-message", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(f.p)))
			dst := make([]byte, 0, 2*len(f.p))
			var out []byte
			for b.Loop() {
				out = AppendDeflated(dst[:0], f.p, DefaultCompressionLevel)
			}
			b.ReportMetric(float64(len(f.p))/float64(len(out)), "ratio")
		})
		b.Run(f.name+"/context-takeover", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(f.p)))
			z := newCompression(CompressionOptions{ContextTakeover: true})
			dst := make([]byte, 0, 2*len(f.p))
			var out []byte
			// Earlier, similar messages in the window: rotate the
			// numbers so that each message differs.
			msgs := make([][]byte, 50)
			for i := range msgs {
				msgs[i] = bytes.ReplaceAll(f.p, []byte("1042"), []byte(fmt.Sprint(1000+i)))
			}
			i := 0
			for b.Loop() {
				out = z.deflateTakeover(dst[:0], msgs[i%len(msgs)])
				i++
			}
			b.ReportMetric(float64(len(f.p))/float64(len(out)), "ratio")
		})
	}
}

// BenchmarkInflate is the cost of reading one compressed message of each
// kind, with a pooled decompressor.
func BenchmarkInflate(b *testing.B) {
	for _, f := range []struct {
		name string
		p    []byte
	}{{"chat440", chatFrame}, {"state4k", stateFrame}} {
		z := AppendDeflated(nil, f.p, flate.BestSpeed)
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(f.p)))
			out := new([]byte)
			*out = make([]byte, 0, 8<<10)
			for b.Loop() {
				if err := inflate(out, z, 64<<10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
