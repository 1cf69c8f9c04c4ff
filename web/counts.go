package web

import (
	"net/http"
	"strconv"

	"github.com/stompgate/stompgate/interceptor"
)

// maxSessionIDLen bounds the id a counts request may look up: server
// session ids are about 20 bytes; a longer one is unknown without asking.
const maxSessionIDLen = 128

// unknownSessionBody is the 404 answer of the counts endpoint.
const unknownSessionBody = `{"error":"no open session with this id"}` + "\n"

// serveCounts answers GET /api/sessions/{id}/counts with the session's
// frame accounting as JSON, or 404 when no such session is open.
func (s *site) serveCounts(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cacheNever)
	h.Set("X-Content-Type-Options", "nosniff")

	id := r.PathValue("id")
	var c interceptor.Counts
	ok := false
	if s.counts != nil && id != "" && len(id) <= maxSessionIDLen {
		c, ok = s.counts(id)
	}
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(unknownSessionBody))
		return
	}
	_, _ = w.Write(appendCounts(make([]byte, 0, 80), c))
}

// appendCounts appends c to b as the counts endpoint's JSON object and a
// newline: {"received":N,"passed":N,"dropped":N}.
func appendCounts(b []byte, c interceptor.Counts) []byte {
	b = append(b, `{"received":`...)
	b = strconv.AppendUint(b, c.Received, 10)
	b = append(b, `,"passed":`...)
	b = strconv.AppendUint(b, c.Passed, 10)
	b = append(b, `,"dropped":`...)
	b = strconv.AppendUint(b, c.Dropped, 10)
	return append(b, "}\n"...)
}
