package wsconn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReadTime reads messages that arrive together and one that arrives
// later: the first two share the time of the read that brought them, and
// each time falls between the client's write and ReadMessage returning.
func TestReadTime(t *testing.T) {
	type read struct{ at, returned time.Time }
	reads := make(chan read, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, nil)
		if err != nil {
			t.Errorf("Accept: %v", err)
			return
		}
		defer c.CloseNow() //nolint:errcheck // the test is over
		defer close(reads)
		for range 3 {
			if _, _, err := c.ReadMessage(); err != nil {
				t.Errorf("ReadMessage: %v", err)
				return
			}
			reads <- read{c.ReadTime(), time.Now()}
		}
	}))
	defer srv.Close()
	c := dial(t, strings.TrimPrefix(srv.URL, "http://"))

	sent := time.Now()
	c.write(concat(clientFrame(0x81, []byte("one")), clientFrame(0x81, []byte("two"))))
	one, two := <-reads, <-reads
	if one.at.Before(sent) || one.at.After(one.returned) {
		t.Errorf("first message read at %v, want between the write at %v and its return at %v", one.at, sent, one.returned)
	}
	if !two.at.Equal(one.at) {
		t.Errorf("second message of the same write read at %v, want the first's %v", two.at, one.at)
	}

	time.Sleep(10 * time.Millisecond)
	sent = time.Now()
	c.write(clientFrame(0x81, []byte("three")))
	three := <-reads
	if three.at.Before(sent) || three.at.After(three.returned) {
		t.Errorf("a later message read at %v, want between its write at %v and its return at %v", three.at, sent, three.returned)
	}
}
