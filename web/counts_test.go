package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/interceptor"
)

func TestCounts(t *testing.T) {
	t.Parallel()
	sessions := map[string]interceptor.Counts{
		"ABCD-1": {Received: 25, Passed: 20, Dropped: 5},
		"ABCD-2": {},
		"a b":    {Received: 1, Passed: 1},
	}
	var asked []string
	h := Handler(Config{Counts: func(id string) (interceptor.Counts, bool) {
		asked = append(asked, id)
		c, ok := sessions[id]
		return c, ok
	}})
	tests := []struct {
		name       string
		target     string
		wantStatus int
		want       interceptor.Counts
	}{
		{name: "open session", target: "/api/sessions/ABCD-1/counts", wantStatus: 200, want: interceptor.Counts{Received: 25, Passed: 20, Dropped: 5}},
		{name: "no frames yet", target: "/api/sessions/ABCD-2/counts", wantStatus: 200},
		{name: "escaped id", target: "/api/sessions/a%20b/counts", wantStatus: 200, want: interceptor.Counts{Received: 1, Passed: 1}},
		{name: "unknown id", target: "/api/sessions/ABCD-9/counts", wantStatus: 404},
		{name: "too long id", target: "/api/sessions/" + strings.Repeat("x", maxSessionIDLen+1) + "/counts", wantStatus: 404},
		{name: "no counts suffix", target: "/api/sessions/ABCD-1", wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, h, "GET", tt.target, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET %s: got status %d, want %d (body %q)", tt.target, resp.StatusCode, tt.wantStatus, body)
			}
			if resp.StatusCode != 200 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", ct)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", cc)
			}
			var got struct {
				Received *uint64 `json:"received"`
				Passed   *uint64 `json:"passed"`
				Dropped  *uint64 `json:"dropped"`
			}
			dec := json.NewDecoder(strings.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if got.Received == nil || got.Passed == nil || got.Dropped == nil {
				t.Fatalf("body %q: want received, passed and dropped", body)
			}
			if c := (interceptor.Counts{Received: *got.Received, Passed: *got.Passed, Dropped: *got.Dropped}); c != tt.want {
				t.Errorf("counts: got %+v, want %+v", c, tt.want)
			}
		})
	}
	for _, id := range asked {
		if len(id) > maxSessionIDLen {
			t.Errorf("Counts was asked for a %d-byte id, want at most %d", len(id), maxSessionIDLen)
		}
	}
}

func TestAppendCountsIsJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []interceptor.Counts{{}, {Received: 1, Passed: 2, Dropped: 3}, {Received: ^uint64(0), Passed: ^uint64(0) - 1, Dropped: 1 << 63}} {
		b := appendCounts(nil, c)
		var got map[string]uint64
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendCounts(%+v) = %q: %v", c, b, err)
		}
		want := map[string]uint64{"received": c.Received, "passed": c.Passed, "dropped": c.Dropped}
		if len(got) != len(want) || got["received"] != want["received"] || got["passed"] != want["passed"] || got["dropped"] != want["dropped"] {
			t.Errorf("appendCounts(%+v) = %q, want %v", c, b, want)
		}
	}
}
