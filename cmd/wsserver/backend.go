package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/server"
)

// The backend's seams: app destinations appended to a Redis Stream
// (appstream) and the server API on the admin listener (api).

// backendSettings are the settings backendFlags registers.
type backendSettings struct {
	appPrefix       string
	appStream       string
	appStreamMaxLen int64
	appTimeout      time.Duration
	apiKey          string
	apiMaxBody      int
}

// backendFlags registers the settings of app destinations and the server
// API.
func (s *settings) backendFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.appPrefix, "app-prefix", server.DefaultAppPrefix, "SENDs to destinations under this prefix go to the backend (the -app-stream), not to subscribers")
	fs.StringVar(&s.appStream, "app-stream", appstream.DefaultStream, "with -redis-url: the Redis Stream app messages are appended to; the backend reads it with a consumer group")
	fs.Int64Var(&s.appStreamMaxLen, "app-stream-maxlen", appstream.DefaultMaxLen, "approximate length (XADD MAXLEN ~) the -app-stream is trimmed to: the backlog kept while no backend reads it")
	fs.DurationVar(&s.appTimeout, "app-timeout", server.DefaultAppTimeout, "bound on appending one app message; a slower or failed append ends the sender's session with ERROR \"backend unavailable\"")
	fs.StringVar(&s.apiKey, "api-key", "", "bearer token of the server API under /api/v1/ on the admin listener (empty: no API)")
	fs.IntVar(&s.apiMaxBody, "api-max-body", api.DefaultMaxBody, "largest message body the server API publishes, in bytes")
}

// validateBackend checks the settings backendFlags registers.
func (s *settings) validateBackend() error {
	if !strings.HasPrefix(s.appPrefix, "/") {
		return badSetting("app-prefix", s.appPrefix, `must start with "/"`)
	}
	if s.appStream == "" {
		return badSetting("app-stream", s.appStream, "must not be empty")
	}
	if s.appStreamMaxLen <= 0 {
		return badSetting("app-stream-maxlen", s.appStreamMaxLen, "must be positive")
	}
	if s.appTimeout <= 0 {
		return badSetting("app-timeout", s.appTimeout, "must be positive")
	}
	if s.apiMaxBody <= 0 {
		return badSetting("api-max-body", s.apiMaxBody, "must be positive")
	}
	if s.apiKey != "" && s.adminAddr == "" {
		return badSetting("api-key", "(set)", "needs the admin listener (-admin-addr)")
	}
	return nil
}

// newAppHandler returns the server's AppHandler: the -app-stream with
// -redis-url, none without (an app SEND then gets ERROR "no backend
// configured").
func (a *app) newAppHandler(st *settings) (server.AppHandler, error) {
	if a.redis == nil {
		return nil, nil
	}
	host, _ := os.Hostname()
	h, err := appstream.New(appstream.Config{Client: a.redis, Stream: st.appStream, MaxLen: st.appStreamMaxLen, Instance: host})
	if err != nil {
		return nil, fmt.Errorf("-app-stream / -app-stream-maxlen: %w", err)
	}
	return h, nil
}

// mountAPI serves the server API on the admin mux when -api-key is set.
func (a *app) mountAPI(mux *http.ServeMux, st *settings, logger *slog.Logger) error {
	if st.apiKey == "" {
		return nil
	}
	cfg := api.Config{Server: a.stomp, Key: st.apiKey, MaxBody: st.apiMaxBody,
		// A published message may carry as many headers as a client's
		// SEND may: -max-headers.
		MaxHeaders: st.maxHeaders, Observer: observer{a.metrics}, Logger: logger}
	if a.fanout != nil {
		cfg.Others = a.fanout
	}
	h, err := api.New(cfg)
	if err != nil {
		return err
	}
	mux.Handle("/api/v1/", h)
	return nil
}
