package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3"
)

// listSessions pages through GET /api/v1/sessions with query (and limit
// per page) and returns the ids, in the order listed, and the first
// answer.
func listSessions(t *testing.T, base, query string, limit int) ([]string, map[string]any) {
	t.Helper()
	var ids []string
	var first map[string]any
	cursor := ""
	for range 100 {
		path := fmt.Sprintf("/api/v1/sessions?limit=%d&%s", limit, query)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, v := apiCall(t, base, "k3y", "GET", path, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, code, v)
		}
		if first == nil {
			first = v
		}
		ss, _ := v["sessions"].([]any)
		if len(ss) > limit {
			t.Fatalf("GET %s: %d sessions, more than the limit", path, len(ss))
		}
		for _, s := range ss {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		next, _ := v["next_cursor"].(string)
		if next == "" {
			return ids, first
		}
		cursor = next
	}
	t.Fatal("more than 100 pages")
	return nil, nil
}

// TestSessionListing lists real go-stomp sessions through the server API
// of a wired server: every session once, two to a page (the
// -api-max-page-size), filtered by destination and by principal, with
// this instance's name and counts; a larger limit is refused and counted.
func TestSessionListing(t *testing.T) {
	base, _ := startApp(t, "-api-key", "k3y", "-api-max-page-size", "2")
	conns := make([]*stomp.Conn, 5)
	var all, room []string
	for i := range conns {
		conns[i] = dialStomp(t, wsURL(base))
		all = append(all, conns[i].Session())
		if i%2 == 0 {
			subscribe(t, conns[i], "/topic/room.7")
			room = append(room, conns[i].Session())
		}
	}

	ids, first := listSessions(t, base, "", 2)
	if got := slices.Sorted(slices.Values(ids)); !slices.Equal(got, slices.Sorted(slices.Values(all))) {
		t.Fatalf("listed %v, want each of %v once", ids, all)
	}
	host, _ := os.Hostname()
	if inst, _ := first["instance"].(string); !strings.HasPrefix(inst, host) || first["matched"] != 5.0 || first["open"] != 5.0 {
		t.Fatalf("first page %v, want instance %s…, matched 5, open 5", first, host)
	}

	ids, first = listSessions(t, base, "destination="+url.QueryEscape("/topic/room.7"), 2)
	if got := slices.Sorted(slices.Values(ids)); !slices.Equal(got, slices.Sorted(slices.Values(room))) || first["matched"] != 3.0 {
		t.Fatalf("room.7 listed %v (%v), want %v", ids, first, room)
	}
	p := "anonymous-" + conns[1].Session()
	if ids, _ := listSessions(t, base, "principal="+p, 2); !slices.Equal(ids, []string{conns[1].Session()}) {
		t.Fatalf("principal %s: %v", p, ids)
	}
	if ids, _ := listSessions(t, base, "principal="+p+"&destination=%2Ftopic%2Froom.7", 2); len(ids) != 0 {
		t.Fatalf("principal %s on room.7: %v, want none", p, ids)
	}

	if code, v := apiCall(t, base, "k3y", "GET", "/api/v1/sessions?limit=3", ""); code != http.StatusBadRequest || v["field"] != "limit" {
		t.Fatalf("limit 3 over -api-max-page-size 2: %d %v", code, v)
	}
	if n := scrape(t, base).sum("stompgate_api_requests_total", `endpoint="sessions"`, `code="400"`); n != 1 {
		t.Fatalf("counted %v refused listings, want 1", n)
	}
}

// TestSessionListingSettingErrors refuses a page size that is not
// positive, naming the setting.
func TestSessionListingSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-api-max-page-size", "0"}, nil, "-api-max-page-size (WSSERVER_API_MAX_PAGE_SIZE) 0: must be positive"},
		{"", nil, map[string]string{"WSSERVER_API_MAX_PAGE_SIZE": "-5"}, "-api-max-page-size (WSSERVER_API_MAX_PAGE_SIZE) -5: must be positive"},
	})
}

// TestInstanceName names an instance by host and public port, so that
// two instances on one host list apart.
func TestInstanceName(t *testing.T) {
	host, _ := os.Hostname()
	for addr, want := range map[string]string{":8080": host + ":8080", "127.0.0.1:9000": host + ":9000", "[::1]:81": host + ":81", "": host} {
		if got := instanceName(addr); got != want {
			t.Errorf("instanceName(%q) = %q, want %q", addr, got, want)
		}
	}
}
