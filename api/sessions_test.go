package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/server"
)

// listIDs returns the session ids of a GET /api/v1/sessions answer.
func listIDs(t *testing.T, v map[string]any) []string {
	t.Helper()
	ss, ok := v["sessions"].([]any)
	if !ok {
		t.Fatalf("no sessions list in %v", v)
	}
	var out []string
	for _, s := range ss {
		out = append(out, s.(map[string]any)["id"].(string))
	}
	return out
}

// TestSessionsListing pages through the sessions of a real server with
// the cursor, filters them by destination and principal, and reports the
// instance's counts; a session that ends between pages is skipped.
func TestSessionsListing(t *testing.T) {
	f := startWith(t, func(c *Config) { c.MaxPageSize, c.Instance = 3, "instance-1" })
	conns := make([]*stomp.Conn, 4)
	for i := range conns {
		conns[i] = f.client(t)
	}
	for _, c := range conns[1:3] {
		if _, err := c.Subscribe("/topic/lobby", stomp.AckAuto); err != nil {
			t.Fatal(err)
		}
		// The RECEIPT comes after the SUBSCRIBE before it is in place.
		if err := c.Send("/topic/none", "", nil, stomp.SendOpt.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]string, len(conns))
	for i, c := range conns {
		want[i] = c.Session()
	}
	slices.Sort(want)

	code, v := f.call(t, "GET", "/api/v1/sessions?limit=2", "s3cret", "")
	first := listIDs(t, v)
	if code != http.StatusOK || len(first) != 2 || v["next_cursor"] == nil || v["matched"] != 4.0 || v["open"] != 4.0 || v["instance"] != "instance-1" {
		t.Fatalf("first page: %d %v", code, v)
	}
	cursor := v["next_cursor"].(string)
	code, v = f.call(t, "GET", "/api/v1/sessions?limit=2&cursor="+url.QueryEscape(cursor), "s3cret", "")
	second := listIDs(t, v)
	if code != http.StatusOK || len(second) != 2 || v["next_cursor"] != nil {
		t.Fatalf("second page: %d %v", code, v)
	}
	all := slices.Concat(first, second)
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Fatalf("pages listed %v, want each of %v once", all, want)
	}
	// Without a limit: DefaultPageSize, here all four.
	if _, v := f.call(t, "GET", "/api/v1/sessions", "s3cret", ""); len(listIDs(t, v)) != 4 || v["next_cursor"] != nil {
		t.Fatalf("without a limit: %v", v)
	}

	code, v = f.call(t, "GET", "/api/v1/sessions?destination="+url.QueryEscape("/topic/lobby"), "s3cret", "")
	lobby := listIDs(t, v)
	slices.Sort(lobby)
	wantLobby := []string{conns[1].Session(), conns[2].Session()}
	slices.Sort(wantLobby)
	if code != http.StatusOK || !slices.Equal(lobby, wantLobby) || v["matched"] != 2.0 || v["open"] != 4.0 {
		t.Fatalf("destination /topic/lobby: %d %v, want %v", code, v, wantLobby)
	}
	p := "anonymous-" + conns[1].Session()
	code, v = f.call(t, "GET", "/api/v1/sessions?destination=%2Ftopic%2Flobby&principal="+p, "s3cret", "")
	if got := listIDs(t, v); code != http.StatusOK || !slices.Equal(got, []string{conns[1].Session()}) || v["matched"] != 1.0 {
		t.Fatalf("destination and principal: %d %v", code, v)
	}

	// The session that would open the second page ends before it is
	// asked for: it is skipped, and nothing is listed twice.
	_, v = f.call(t, "GET", "/api/v1/sessions?limit=1", "s3cret", "")
	head := listIDs(t, v)
	cursor = v["next_cursor"].(string)
	_, v = f.call(t, "GET", "/api/v1/sessions?limit=1&cursor="+url.QueryEscape(cursor), "s3cret", "")
	gone := listIDs(t, v)[0]
	for _, c := range conns {
		if c.Session() == gone {
			// go-stomp closes the WebSocket after the RECEIPT; the
			// close may report the connection closed already.
			_ = c.Disconnect()
		}
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := f.srv.Sessions(); n != 3 {
			return fmt.Errorf("%d sessions open, want 3", n)
		}
		return nil
	})
	_, v = f.call(t, "GET", "/api/v1/sessions?limit=3&cursor="+url.QueryEscape(cursor), "s3cret", "")
	rest := listIDs(t, v)
	if len(rest) != 2 || slices.Contains(rest, gone) || slices.Contains(rest, head[0]) {
		t.Fatalf("after %s ended: %v (first %v)", gone, rest, head)
	}
}

// TestSessionsRefuses answers 400 naming the parameter for a limit out of
// range and for a cursor the API did not make, and counts the refusals.
func TestSessionsRefuses(t *testing.T) {
	f := startWith(t, func(c *Config) { c.MaxPageSize = 3 })
	for _, q := range []struct{ query, field string }{
		{"limit=4", "limit"},
		{"limit=0", "limit"},
		{"limit=-1", "limit"},
		{"limit=x", "limit"},
		{"limit=99999999999999999999", "limit"},
		{"cursor=!!", "cursor"},
		{"cursor=" + encodeCursor(server.SessionPosition{Since: 1, ID: "a"})[:3], "cursor"},
		{"cursor=eA", "cursor"}, // "x": no separator
		{"cursor=" + strings.Repeat("A", maxCursorLen+1), "cursor"},
	} {
		code, v := f.call(t, "GET", "/api/v1/sessions?"+q.query, "s3cret", "")
		if code != http.StatusBadRequest || v["field"] != q.field || v["error"] == "" {
			t.Errorf("%s: %d %v, want 400 naming %s", q.query, code, v, q.field)
		}
	}
	if n := f.obs.n["sessions Bad Request"]; n != 9 {
		t.Fatalf("counted %d refused listings, want 9", n)
	}
}

// TestCursorRoundTrip checks that a cursor reads back as the position
// it was made from, whatever the session id holds.
func TestCursorRoundTrip(t *testing.T) {
	for _, pos := range []server.SessionPosition{{Since: 1, ID: "a"}, {Since: 1764200000123456789, ID: "x.y-z"}} {
		got, ok := decodeCursor(encodeCursor(pos))
		if !ok || got != pos {
			t.Errorf("decodeCursor(encodeCursor(%v)) = %v, %v", pos, got, ok)
		}
	}
}
