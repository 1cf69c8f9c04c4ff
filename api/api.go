package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
)

// DefaultMaxBody is the largest message body publish accepts, decoded:
// stompframe's default frame limit, so that what the API publishes is
// never larger than what a client may send.
const DefaultMaxBody = stompframe.DefaultMaxFrameSize

// DefaultMaxHeaders is the most headers publish accepts: stompframe's
// default header limit, so that every subscriber's client can read the
// MESSAGE and the relay carries it (it drops payloads of more than 1024
// headers).
const DefaultMaxHeaders = stompframe.DefaultMaxHeaders

// Observer counts API requests. metrics.Metrics implements it.
type Observer interface {
	// APIRequest reports one answered request: its endpoint (one of
	// outcome.APIPublish, APIDisconnect, APISessions) and HTTP status.
	APIRequest(endpoint string, status int)
}

type nopObserver struct{}

func (nopObserver) APIRequest(string, int) {}

// Others reaches the other instances of a deployment. cmd/wsserver
// implements it with Redis Pub/Sub on -redis-url.
type Others interface {
	// Disconnect asks every other instance to end the sessions of
	// principal and the session sessionID, with reason as the ERROR
	// body. It returns once the request is sent, not once it is done.
	Disconnect(ctx context.Context, principal, sessionID, reason string) error
}

// Config configures the API handler.
type Config struct {
	// Server is the STOMP server the API acts on. Required.
	Server *server.Server
	// Key is the bearer token every request must carry. Required: an
	// API without a key is not served.
	Key string
	// MaxBody is the largest decoded message body publish takes; a larger
	// one is answered 400 naming the body field. Default DefaultMaxBody;
	// negative is an error.
	MaxBody int
	// MaxHeaders is the most headers publish takes; more is answered 400
	// naming the headers field. Default DefaultMaxHeaders; negative is an
	// error.
	MaxHeaders int
	// MaxPageSize is the largest limit GET /api/v1/sessions takes; a
	// larger one is answered 400 naming the limit parameter. Default
	// DefaultMaxPageSize; negative is an error.
	MaxPageSize int
	// Instance names this instance in GET /api/v1/sessions, whose counts
	// are this instance's. Default: the host name (os.Hostname).
	Instance string
	// Others carries disconnect requests to the other instances. Nil:
	// disconnect ends this instance's sessions only.
	Others Others
	// Presence answers GET /api/v1/presence. Nil: it answers 404 for
	// every destination.
	Presence Presence
	// Observer counts requests. Nil: none.
	Observer Observer
	// Logger receives refused requests at debug level. Nil:
	// slog.Default().
	Logger *slog.Logger
	// Tracer records a span per accepted publish request. Nil: none.
	Tracer Tracer
}

// handler serves the API.
type handler struct {
	cfg Config
	key [sha256.Size]byte
	mux *http.ServeMux
}

// New validates cfg and returns the API's handler, which serves the paths
// under /api/v1/.
func New(cfg Config) (http.Handler, error) {
	if cfg.Server == nil {
		return nil, configErrorf("Server is nil")
	}
	if cfg.Key == "" {
		return nil, configErrorf("Key is empty")
	}
	if cfg.MaxBody < 0 {
		return nil, configErrorf("MaxBody %d is negative", cfg.MaxBody)
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxHeaders < 0 {
		return nil, configErrorf("MaxHeaders %d is negative", cfg.MaxHeaders)
	}
	if cfg.MaxHeaders == 0 {
		cfg.MaxHeaders = DefaultMaxHeaders
	}
	if cfg.MaxPageSize < 0 {
		return nil, configErrorf("MaxPageSize %d is negative", cfg.MaxPageSize)
	}
	if cfg.MaxPageSize == 0 {
		cfg.MaxPageSize = DefaultMaxPageSize
	}
	if cfg.Instance == "" {
		cfg.Instance, _ = os.Hostname()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{cfg: cfg, key: sha256.Sum256([]byte(cfg.Key)), mux: http.NewServeMux()}
	h.route("POST /api/v1/publish", outcome.APIPublish, h.publish)
	h.route("POST /api/v1/disconnect", outcome.APIDisconnect, h.disconnect)
	h.route("GET /api/v1/sessions", outcome.APISessions, h.sessions)
	h.route("GET /api/v1/presence", outcome.APIPresence, h.presenceMembers)
	return h.mux, nil
}

// endpointFunc answers one request with a status and a JSON value.
type endpointFunc func(r *http.Request) (status int, v any)

func (h *handler) route(pattern, endpoint string, fn endpointFunc) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		status, v := http.StatusUnauthorized, any(apiError{Error: "missing or wrong bearer token", Field: "Authorization"})
		if h.authorized(r) {
			status, v = fn(r)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stompgate"`)
		}
		h.cfg.Observer.APIRequest(endpoint, status)
		if status >= 400 {
			h.cfg.Logger.Debug("api request refused", "endpoint", endpoint, "status", status, "remote", r.RemoteAddr)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	})
}

// authorized compares the bearer token with the key in constant time; the
// hashes make the comparison independent of the token's length too.
func (h *handler) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], h.key[:]) == 1
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func badRequest(field, msg string) (int, any) {
	return http.StatusBadRequest, apiError{Error: msg, Field: field}
}
