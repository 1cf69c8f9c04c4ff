package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once lose nothing (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("len %d, want 800", len(got))
	}
}
