package wsconn

import (
	"bytes"
	"compress/flate"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// The ratio corpora: STOMP MESSAGE frames as the server delivers them
// (subscription, destination, a message-id that changes every frame,
// content-length), carrying bodies shaped as the load tool's `-body chat`
// and `-body game`: a 25-byte hex time stamp, then chat messages or
// game-state snapshots as JSON, every number and word drawn at random
// from a fixed seed, so that no two bodies are alike.
const (
	corpusChat   = "chat"   // 400-byte chat bodies, all distinct
	corpusChat50 = "chat50" // the same, 50 distinct bodies over and over
	corpusBody   = "body"   // the chat bodies alone, without a frame
	corpusGame   = "game"   // 4 KB game-state bodies, all distinct
)

// corpusFrames is how many frames a ratio is measured over: more than a
// 32 KiB window holds of either kind.
const corpusFrames = 1000

var ratioWords = strings.Fields(`the a to and of in is it you that he was for on are with as I his they be
at one have this from or had by hot word but what some we can out other were all there when up use your
how said an each she which do their time if will way about many then them write would like so these her
long make thing see him two has look more day could go come did number sound no most people my over know
water than call first who may down side been now find any new work part take get place made live where
after back little only round man year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before move right boy old too same tell
does set three want air well also play small end put home read hand port large spell add even land here
must big high such follow act why ask men change went light kind off need house picture try us again animal
point mother world near build self earth father game room team win lose next round ready lunch table today`)

var ratioNames = strings.Fields(`ana ben chloe dev emma farid gina hugo ines jon kira leo maya nils omar pia quinn rosa sam tess`)

// ratioBody returns a body of n bytes: the stamp of message i, then
// chat messages or game snapshots drawn from r.
func ratioBody(r *rand.Rand, game bool, n, i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "T%016x%08x", int64(i)*7_777_777+123_456_789, i%2)
	for b.Len() < n {
		if game {
			fmt.Fprintf(&b, `{"type":"state","tick":%d,"players":[`, r.IntN(1_000_000))
			for p, np := 0, 4+r.IntN(6); p < np; p++ {
				if p > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":%d,"name":"%s","team":"%s","x":%.2f,"y":%.2f,"vx":%.2f,"vy":%.2f,"hp":%d,"score":%d,"alive":%t}`,
					r.IntN(1000), ratioNames[r.IntN(len(ratioNames))], []string{"red", "blue", "green", "gold"}[r.IntN(4)],
					r.Float64()*1024, r.Float64()*768, r.Float64()*8-4, r.Float64()*8-4, r.IntN(101), r.IntN(5000), r.IntN(10) > 0)
			}
			b.WriteString("]}\n")
			continue
		}
		fmt.Fprintf(&b, `{"type":"chat","user":"%s","room":"lobby-%d","text":"`, ratioNames[r.IntN(len(ratioNames))], r.IntN(50))
		for w, nw := 0, 6+r.IntN(20); w < nw; w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(ratioWords[r.IntN(len(ratioWords))])
		}
		fmt.Fprintf(&b, `","sent":%d}`+"\n", 1_764_000_000_000+r.Int64N(1_000_000_000))
	}
	return []byte(b.String()[:n])
}

// ratioCorpus returns the frames of corpus kind.
func ratioCorpus(kind string) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	size, game := 400, false
	if kind == corpusGame {
		size, game = 4096, true
	}
	distinct := corpusFrames
	if kind == corpusChat50 {
		distinct = 50
	}
	bodies := make([][]byte, distinct)
	for i := range bodies {
		bodies[i] = ratioBody(r, game, size, i)
	}
	frames := make([][]byte, corpusFrames)
	for i := range frames {
		body := bodies[i%distinct]
		if kind == corpusBody {
			frames[i] = body
			continue
		}
		frames[i] = []byte("MESSAGE\nsubscription:0\ndestination:/topic/room.17\nmessage-id:5f0c2a9e-" + strconv.Itoa(100_000+i) +
			"\ncontent-length:" + strconv.Itoa(len(body)) + "\n\n" + string(body) + "\x00")
	}
	return frames
}

// flateRatio is the ratio compress/flate gives frames used directly, as
// RFC 7692 section 7.2.1 says: a sync flush after each message, its last
// four bytes left off; one writer for all of them under takeover, a new
// one for each otherwise.
func flateRatio(tb testing.TB, frames [][]byte, level int, takeover bool) float64 {
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, level)
	if err != nil {
		tb.Fatal(err)
	}
	in, z := 0, 0
	for _, f := range frames {
		if !takeover {
			w.Reset(&out)
		}
		out.Reset()
		if _, err := w.Write(f); err != nil {
			tb.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
		in += len(f)
		z += out.Len() - len(deflateTail)
	}
	return float64(in) / float64(z)
}

// ourRatio is the ratio this package gives frames: AppendDeflated for
// each, or one connection's compression under ContextTakeover.
func ourRatio(frames [][]byte, level int, takeover bool) float64 {
	z := newCompression(CompressionOptions{Level: level, ContextTakeover: takeover})
	var dst []byte
	in, out := 0, 0
	for _, f := range frames {
		if takeover {
			dst = z.deflateTakeover(dst[:0], f)
		} else {
			dst = AppendDeflated(dst[:0], f, level)
		}
		in += len(f)
		out += len(dst)
	}
	return float64(in) / float64(out)
}

// BenchmarkDeflateRatio reports, for each corpus, level and mode, the
// bytes ratio this package gives (ratio) beside compress/flate used
// directly on the same frames in the same run (flate-ratio), and the
// cost of one message (ns/op).
func BenchmarkDeflateRatio(b *testing.B) {
	for _, kind := range []string{corpusChat, corpusChat50, corpusBody, corpusGame} {
		frames := ratioCorpus(kind)
		for _, level := range []int{1, 2, 4, 6, 9} {
			for _, takeover := range []bool{false, true} {
				mode := "per-message"
				if takeover {
					mode = "takeover"
				}
				b.Run(fmt.Sprintf("%s/level%d/%s", kind, level, mode), func(b *testing.B) {
					b.ReportAllocs()
					ours, ref := ourRatio(frames, level, takeover), flateRatio(b, frames, level, takeover)
					z := newCompression(CompressionOptions{Level: level, ContextTakeover: takeover})
					dst := make([]byte, 0, 2*len(frames[0]))
					i := 0
					for b.Loop() {
						if takeover {
							dst = z.deflateTakeover(dst[:0], frames[i%len(frames)])
						} else {
							dst = AppendDeflated(dst[:0], frames[i%len(frames)], level)
						}
						i++
					}
					b.ReportMetric(ours, "ratio")
					b.ReportMetric(ref, "flate-ratio")
				})
			}
		}
	}
}

// TestDeflateRatioMatchesFlate checks that this package compresses as
// compress/flate used directly does, to the byte, at every level and in
// both modes, and that a connection's own compressor keeps a window
// across messages at every level: on 50 bodies over and over, each
// message after the first 50 is found whole in the window, which level
// 1 (flate.BestSpeed, whose matches reach one block back) would miss.
func TestDeflateRatioMatchesFlate(t *testing.T) {
	t.Parallel()
	chat, chat50 := ratioCorpus(corpusChat), ratioCorpus(corpusChat50)
	for _, level := range []int{1, 2, 6, 9} {
		if got, want := ourRatio(chat, level, false), flateRatio(t, chat, level, false); got != want {
			t.Errorf("level %d per message: ratio %.4f, compress/flate %.4f", level, got, want)
		}
		eff := max(level, minTakeoverLevel)
		if got, want := ourRatio(chat, level, true), flateRatio(t, chat, eff, true); got != want {
			t.Errorf("level %d takeover: ratio %.4f, compress/flate at level %d %.4f", level, got, eff, want)
		}
		if got := ourRatio(chat50, level, true); got < 10 {
			t.Errorf("level %d takeover on 50 bodies over and over: ratio %.2f, want at least 10 (a window)", level, got)
		}
	}
	if got := flateRatio(t, chat50, 1, true); got >= 10 {
		t.Errorf("compress/flate level 1 on 50 bodies over and over: ratio %.2f; if it now keeps a window, minTakeoverLevel can go", got)
	}
}
