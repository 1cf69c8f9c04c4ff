package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/server"
)

// BenchmarkPublish measures POST /api/v1/publish over loopback HTTP with
// keep-alive, 100-byte bodies, to a destination without subscribers (the
// API's own cost: authentication, JSON, the broker lookup), from
// GOMAXPROCS*4 concurrent callers. It reports msgs/s and the p99 request
// latency.
func BenchmarkPublish(b *testing.B) {
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	h, err := New(Config{Server: srv, Key: "k", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body := `{"destination":"/topic/game.1","body":"` + strings.Repeat("x", 100) + `"}`

	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/api/v1/publish", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer k")
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	reportRateAndP99(b, lat, elapsed)
}

// reportRateAndP99 adds msgs/s and p99-ms to the benchmark's output.
func reportRateAndP99(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
