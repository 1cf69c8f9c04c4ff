package wsconn

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestFrameHook: the hook sees every frame the peer sends, in order, with
// its payload length: a ping, the fragments of a message (an empty one
// among them) and a whole message, before ReadMessage returns the
// messages they make.
func TestFrameHook(t *testing.T) {
	type result struct {
		seen []int
		msgs []string
	}
	done := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, nil)
		if err != nil {
			t.Errorf("Accept: %v", err)
			return
		}
		defer c.CloseNow() //nolint:errcheck // the test is over
		var res result
		c.SetFrameHook(func(n int) { res.seen = append(res.seen, n) })
		for range 2 {
			_, p, err := c.ReadMessage()
			if err != nil {
				t.Errorf("ReadMessage: %v", err)
				break
			}
			res.msgs = append(res.msgs, string(p))
		}
		done <- res
	}))
	defer srv.Close()
	c := dial(t, strings.TrimPrefix(srv.URL, "http://"))
	c.write(concat(
		clientFrame(0x89, []byte("ping")),  // ping
		clientFrame(0x01, []byte("ab")),    // text, not final
		clientFrame(0x00, nil),             // empty continuation
		clientFrame(0x80, []byte("cde")),   // final continuation
		clientFrame(0x81, []byte("whole")), // a whole message
	))
	res := <-done
	if want := []int{4, 2, 0, 3, 5}; !slices.Equal(res.seen, want) {
		t.Errorf("hook saw payloads %v, want %v", res.seen, want)
	}
	if want := []string{"abcde", "whole"}; !slices.Equal(res.msgs, want) {
		t.Errorf("messages %q, want %q", res.msgs, want)
	}
}
