package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/web"
)

// ExampleHandler mounts the page beside the WebSocket endpoint and asks
// the counts endpoint for a session. In the server, Counts is
// server.Server.SessionCounts.
func ExampleHandler() {
	counts := func(id string) (interceptor.Counts, bool) {
		if id != "Q2Z7-1" {
			return interceptor.Counts{}, false
		}
		return interceptor.Counts{Received: 102, Passed: 22, Dropped: 80}, true
	}
	mux := http.NewServeMux()
	mux.Handle("/ws", http.NotFoundHandler()) // the STOMP endpoint
	mux.Handle("/", web.Handler(web.Config{Counts: counts, WSPath: "/ws"}))

	for _, target := range []string{"/api/sessions/Q2Z7-1/counts", "/api/sessions/gone/counts"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 {"received":102,"passed":22,"dropped":80}
	// 404 {"error":"no open session with this id"}
}
