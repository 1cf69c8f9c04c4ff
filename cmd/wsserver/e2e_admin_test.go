package main

import (
	"net/http"
	"testing"
)

// TestListenersSplit checks what each listener serves: STOMP, health and
// (unless -demo=false) the demo page on the public one; metrics and (only
// with -pprof) the profiler on the admin one.
func TestListenersSplit(t *testing.T) {
	get := func(t *testing.T, url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name  string
		args  []string
		paths map[string][2]int // path: public status, admin status
	}{
		{"defaults", nil, map[string][2]int{
			"/metrics":      {http.StatusNotFound, http.StatusOK},
			"/healthz":      {http.StatusOK, http.StatusOK},
			"/readyz":       {http.StatusOK, http.StatusOK},
			"/":             {http.StatusOK, http.StatusNotFound},
			"/debug/pprof/": {http.StatusNotFound, http.StatusNotFound},
		}},
		{"no demo, pprof", []string{"-demo=false", "-pprof"}, map[string][2]int{
			"/":             {http.StatusNotFound, http.StatusNotFound},
			"/metrics":      {http.StatusNotFound, http.StatusOK},
			"/debug/pprof/": {http.StatusNotFound, http.StatusOK},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := startApp(t, tc.args...)
			admin := adminBase(t, base)
			for path, want := range tc.paths {
				if got := get(t, base+path); got != want[0] {
					t.Errorf("public %s: %d, want %d", path, got, want[0])
				}
				if got := get(t, admin+path); got != want[1] {
					t.Errorf("admin %s: %d, want %d", path, got, want[1])
				}
			}
		})
	}
}
