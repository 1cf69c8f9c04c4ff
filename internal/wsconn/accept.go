package wsconn

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// AcceptOptions configures Accept.
type AcceptOptions struct {
	// Subprotocols the server speaks, in its order of preference: the
	// first of them the client offered is chosen. None: no subprotocol.
	Subprotocols []string
	// OriginPatterns are path.Match patterns, matched without regard to
	// case against the host of a cross-origin request's Origin header, or
	// against scheme://host when the pattern contains "://". A request
	// whose Origin host is its own Host, or that has no Origin, is always
	// accepted.
	OriginPatterns []string
	// Compression, when set, accepts permessage-deflate (RFC 7692) from
	// clients that offer it; nil negotiates no extension.
	Compression *CompressionOptions
}

// HandshakeError is a refused upgrade; Accept has written Status and Text
// as the HTTP response.
type HandshakeError struct {
	Status int
	Text   string
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("wsconn: handshake refused (%d): %s", e.Status, e.Text)
}

// acceptGUID is the fixed GUID of RFC 6455 section 1.3.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Accept upgrades the request to a WebSocket connection. On a refused
// handshake it writes the HTTP error response and returns a
// *HandshakeError.
func Accept(w http.ResponseWriter, r *http.Request, opts *AcceptOptions) (*Conn, error) {
	if opts == nil {
		opts = &AcceptOptions{}
	}
	key, err := checkRequest(w, r)
	if err == nil {
		err = checkOrigin(r, opts.OriginPatterns)
	}
	if err != nil {
		var he *HandshakeError
		if errors.As(err, &he) {
			http.Error(w, he.Text, he.Status)
		}
		return nil, err
	}

	h := w.Header()
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", acceptKey(key))
	sub := chooseSubprotocol(r.Header, opts.Subprotocols)
	if sub != "" {
		h.Set("Sec-WebSocket-Protocol", sub)
	}
	var z *compression
	if co := opts.Compression; co != nil {
		if p, ok := negotiateDeflate(r.Header); ok {
			o := *co
			o.ContextTakeover = o.ContextTakeover && !p.serverNoTakeover
			z = newCompression(o)
			h.Set("Sec-WebSocket-Extensions", deflateResponse(p, co.ContextTakeover))
		}
	}
	w.WriteHeader(http.StatusSwitchingProtocols)
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("wsconn: hijack: %w", err)
	}
	// The HTTP server's deadlines are for one request; the connection
	// must not inherit them (net/http clears them on hijack today).
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("wsconn: clearing the request's deadlines: %w", err)
	}
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("wsconn: writing the 101 response: %w", err)
	}
	c := newConn(nc, sub)
	c.z = z
	if n := brw.Reader.Buffered(); n > 0 {
		// The client may send its first frame right behind the request,
		// and the HTTP server has read it already.
		pending, _ := brw.Reader.Peek(n)
		c.stash = append([]byte(nil), pending...)
	}
	return c, nil
}

// newConn wraps a connection whose handshake is done.
func newConn(nc net.Conn, sub string) *Conn {
	c := &Conn{nc: nc, subprotocol: sub, limit: 32 << 10}
	c.useDescriptor()
	return c
}

func refuse(status int, format string, args ...any) error {
	return &HandshakeError{Status: status, Text: fmt.Sprintf(format, args...)}
}

// checkRequest checks the upgrade request (RFC 6455 section 4.2.1) and
// returns its key.
func checkRequest(w http.ResponseWriter, r *http.Request) (string, error) {
	if r.Method != http.MethodGet {
		return "", refuse(http.StatusMethodNotAllowed, "a WebSocket upgrade must be a GET, not %s", r.Method)
	}
	if !r.ProtoAtLeast(1, 1) {
		return "", refuse(http.StatusUpgradeRequired, "a WebSocket upgrade needs HTTP/1.1, not %s", r.Proto)
	}
	upgradeHeaders := func() {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Sec-WebSocket-Version", "13")
	}
	if !hasToken(r.Header, "Connection", "upgrade") {
		upgradeHeaders()
		return "", refuse(http.StatusUpgradeRequired, "the Connection header must contain upgrade")
	}
	if !hasToken(r.Header, "Upgrade", "websocket") {
		upgradeHeaders()
		return "", refuse(http.StatusUpgradeRequired, "the Upgrade header must contain websocket")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		upgradeHeaders()
		return "", refuse(http.StatusUpgradeRequired, "unsupported Sec-WebSocket-Version %q: this server speaks 13", v)
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return "", refuse(http.StatusBadRequest, "the request must carry exactly one Sec-WebSocket-Key")
	}
	key := strings.TrimSpace(keys[0])
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 16 {
		return "", refuse(http.StatusBadRequest, "Sec-WebSocket-Key must be 16 bytes in base64")
	}
	return key, nil
}

// checkOrigin refuses a cross-origin request whose origin matches none of
// the patterns.
func checkOrigin(r *http.Request, patterns []string) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return refuse(http.StatusForbidden, "Origin %q is not a URL with a host", origin)
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, err := path.Match(strings.ToLower(p), strings.ToLower(target)); err == nil && ok {
			return nil
		}
	}
	return refuse(http.StatusForbidden, "Origin %q is not allowed", origin)
}

func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// hasToken reports whether a comma-separated header holds token, in any
// case.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func chooseSubprotocol(h http.Header, ours []string) string {
	for _, sp := range ours {
		for _, v := range h.Values("Sec-WebSocket-Protocol") {
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); strings.EqualFold(t, sp) {
					return t
				}
			}
		}
	}
	return ""
}
