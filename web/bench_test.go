package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stompgate/stompgate/interceptor"
)

// BenchmarkAppendCounts is the counts endpoint's encoder; its peer,
// BenchmarkAppendCountsJSONMarshal, is encoding/json on a tagged struct.
func BenchmarkAppendCounts(b *testing.B) {
	b.ReportAllocs()
	c := interceptor.Counts{Received: 4321, Passed: 1234, Dropped: 3087}
	buf := make([]byte, 0, 80)
	for b.Loop() {
		buf = appendCounts(buf[:0], c)
	}
}

func BenchmarkAppendCountsJSONMarshal(b *testing.B) {
	b.ReportAllocs()
	type counts struct {
		Received uint64 `json:"received"`
		Passed   uint64 `json:"passed"`
		Dropped  uint64 `json:"dropped"`
	}
	c := counts{Received: 4321, Passed: 1234, Dropped: 3087}
	for b.Loop() {
		if _, err := json.Marshal(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeCounts is one poll of the counts endpoint through the
// handler's mux, serial and in parallel.
func BenchmarkServeCounts(b *testing.B) {
	h := Handler(Config{Counts: func(string) (interceptor.Counts, bool) {
		return interceptor.Counts{Received: 4321, Passed: 1234, Dropped: 3087}, true
	}})
	req := httptest.NewRequest("GET", "/api/sessions/ABCDEFGH-42/counts", nil)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		w := newDiscard()
		for b.Loop() {
			h.ServeHTTP(w.reset(), req)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			w := newDiscard()
			for pb.Next() {
				h.ServeHTTP(w.reset(), req)
			}
		})
	})
}

// BenchmarkServeStatic serves the vendored bundle; its peer,
// BenchmarkServeStaticFileServer, is http.FileServerFS on the same
// embedded files.
func BenchmarkServeStatic(b *testing.B) {
	b.ReportAllocs()
	h := Handler(Config{})
	req := httptest.NewRequest("GET", "/static/stompjs/stomp.umd.min.js", nil)
	w := newDiscard()
	for b.Loop() {
		h.ServeHTTP(w.reset(), req)
	}
}

func BenchmarkServeStaticFileServer(b *testing.B) {
	b.ReportAllocs()
	h := http.FileServerFS(staticFiles)
	req := httptest.NewRequest("GET", "/static/stompjs/stomp.umd.min.js", nil)
	w := newDiscard()
	for b.Loop() {
		h.ServeHTTP(w.reset(), req)
	}
}

// discard is a ResponseWriter that keeps only the header map, reused
// across requests, so the benchmarks measure the handler rather than a
// recorder. One per goroutine.
type discard struct{ h http.Header }

func newDiscard() *discard { return &discard{h: http.Header{}} }

// reset empties the header map for the next request.
func (d *discard) reset() *discard {
	clear(d.h)
	return d
}

func (d *discard) Header() http.Header       { return d.h }
func (*discard) Write(p []byte) (int, error) { return len(p), nil }
func (*discard) WriteHeader(int)             {}
