package wsconn

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestHandshakeRefused(t *testing.T) {
	t.Parallel()
	drop := func(names ...string) []string { return names }
	tests := []struct {
		name   string
		method string
		lines  []string
		opts   *AcceptOptions
		status int
	}{
		{"POST", http.MethodPost, headers(nil), nil, 405},
		{"HEAD", http.MethodHead, headers(nil), nil, 405},
		{"no Connection", "GET", headers(drop("Connection")), nil, 426},
		{"Connection without upgrade", "GET", headers(drop("Connection"), "Connection: keep-alive"), nil, 426},
		{"no Upgrade", "GET", headers(drop("Upgrade")), nil, 426},
		{"Upgrade h2c", "GET", headers(drop("Upgrade"), "Upgrade: h2c"), nil, 426},
		{"no version", "GET", headers(drop("Sec-WebSocket-Version")), nil, 426},
		{"version 8", "GET", headers(drop("Sec-WebSocket-Version"), "Sec-WebSocket-Version: 8"), nil, 426},
		{"version 14", "GET", headers(drop("Sec-WebSocket-Version"), "Sec-WebSocket-Version: 14"), nil, 426},
		{"no key", "GET", headers(drop("Sec-WebSocket-Key")), nil, 400},
		{"two keys", "GET", headers(nil, "Sec-WebSocket-Key: "+testKey), nil, 400},
		{"key not base64", "GET", headers(drop("Sec-WebSocket-Key"), "Sec-WebSocket-Key: not base64 at all!"), nil, 400},
		{"key of 15 bytes", "GET", headers(drop("Sec-WebSocket-Key"), "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAA"), nil, 400},
		{"key of 17 bytes", "GET", headers(drop("Sec-WebSocket-Key"), "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAAA="), nil, 400},
		{"empty key", "GET", headers(drop("Sec-WebSocket-Key"), "Sec-WebSocket-Key:"), nil, 400},
		{"cross origin, no patterns", "GET", headers(nil, "Origin: http://other.test"), nil, 403},
		{"origin not matched", "GET", headers(nil, "Origin: http://evil.test"),
			&AcceptOptions{OriginPatterns: []string{"*.example.com"}}, 403},
		{"origin null", "GET", headers(nil, "Origin: null"),
			&AcceptOptions{OriginPatterns: []string{"*.example.com"}}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{opts: tt.opts})
			c := dialHTTP(t, srv.addr, tt.method, tt.lines, nil)
			if c.resp.StatusCode != tt.status {
				t.Errorf("status = %s, want %d", c.resp.Status, tt.status)
			}
			if tt.status == 426 {
				if got := c.resp.Header.Get("Upgrade"); got != "websocket" {
					t.Errorf("426 with Upgrade %q, want websocket", got)
				}
				if got := c.resp.Header.Get("Sec-WebSocket-Version"); got != "13" {
					t.Errorf("426 with Sec-WebSocket-Version %q, want 13", got)
				}
			}
			if got := c.resp.Header.Get("Sec-WebSocket-Accept"); got != "" {
				t.Errorf("refusal carries Sec-WebSocket-Accept %q", got)
			}
			o := srv.next(t)
			var he *HandshakeError
			if !errors.As(o.accept, &he) {
				t.Fatalf("Accept error = %v, want a *HandshakeError", o.accept)
			}
			if he.Status != tt.status || he.Text == "" {
				t.Errorf("HandshakeError = %+v, want status %d and a text", he, tt.status)
			}
		})
	}
}

func TestHandshakeAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
	}{
		{"Connection with several tokens", headers([]string{"Connection"}, "Connection: keep-alive, Upgrade")},
		{"Connection token split over two lines", headers([]string{"Connection"}, "Connection: keep-alive", "Connection: upgrade")},
		{"Upgrade in another case", headers([]string{"Upgrade"}, "Upgrade: WebSocket")},
		{"lower-case header names", []string{
			"connection: upgrade", "upgrade: websocket",
			"sec-websocket-version: 13", "sec-websocket-key: " + testKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{})
			c := dialHTTP(t, srv.addr, http.MethodGet, tt.lines, nil)
			c.checkSwitched()
			c.write(clientFrame(finBit|fText, []byte("ok")))
			c.expect(serverFrame(finBit|fText, []byte("ok")))
		})
	}
}

func TestSubprotocol(t *testing.T) {
	t.Parallel()
	opts := &AcceptOptions{Subprotocols: []string{"v12.stomp", "v11.stomp", "v10.stomp"}}
	tests := []struct {
		name    string
		offered []string // header lines
		want    string
	}{
		{"none offered", nil, ""},
		{"none in common", []string{"Sec-WebSocket-Protocol: chat, mqtt"}, ""},
		{"the only one in common", []string{"Sec-WebSocket-Protocol: chat, v10.stomp"}, "v10.stomp"},
		{"server's preference wins", []string{"Sec-WebSocket-Protocol: v10.stomp, v11.stomp, v12.stomp"}, "v12.stomp"},
		{"offered over two lines", []string{"Sec-WebSocket-Protocol: chat", "Sec-WebSocket-Protocol: v11.stomp"}, "v11.stomp"},
		{"another case", []string{"Sec-WebSocket-Protocol: V11.STOMP"}, "v11.stomp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{opts: opts})
			c := dial(t, srv.addr, tt.offered...)
			got := c.resp.Header.Get("Sec-WebSocket-Protocol")
			if !strings.EqualFold(got, tt.want) {
				t.Errorf("Sec-WebSocket-Protocol = %q, want %q", got, tt.want)
			}
			if got != "" && !strings.Contains(strings.Join(tt.offered, ","), got) {
				t.Errorf("Sec-WebSocket-Protocol = %q, which the client did not offer in %q", got, tt.offered)
			}
			if n := len(c.resp.Header.Values("Sec-WebSocket-Protocol")); n > 1 {
				t.Errorf("%d Sec-WebSocket-Protocol headers", n)
			}
			_ = c.nc.Close()
			if o := srv.next(t); o.subprotocol != got {
				t.Errorf("Subprotocol() = %q, header %q", o.subprotocol, got)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	patterns := []string{"*.example.com", "https://app.test"}
	tests := []struct {
		name     string
		patterns []string
		origin   string // "" sends none; "self" sends the server's own
		status   int
	}{
		{"no Origin", nil, "", 101},
		{"same host, no patterns", nil, "self", 101},
		{"same host, other patterns", patterns, "self", 101},
		{"cross origin, no patterns", nil, "http://foo.example.com", 403},
		{"host pattern", patterns, "http://foo.example.com", 101},
		{"host pattern, any scheme", patterns, "https://bar.example.com", 101},
		{"host pattern in another case", patterns, "HTTP://FOO.EXAMPLE.COM", 101},
		{"host pattern needs a subdomain", patterns, "http://example.com", 403},
		{"host pattern and a suffix", patterns, "http://foo.example.com.evil.test", 403},
		{"scheme pattern", patterns, "https://app.test", 101},
		{"scheme pattern, other scheme", patterns, "http://app.test", 403},
		{"unknown origin", patterns, "http://evil.test", 403},
		{"not a URL", patterns, "null", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{opts: &AcceptOptions{OriginPatterns: tt.patterns}})
			var extra []string
			switch tt.origin {
			case "":
			case "self":
				extra = append(extra, "Origin: http://"+srv.addr)
			default:
				extra = append(extra, "Origin: "+tt.origin)
			}
			c := dialHTTP(t, srv.addr, http.MethodGet, headers(nil, extra...), nil)
			if c.resp.StatusCode != tt.status {
				t.Fatalf("status = %s, want %d", c.resp.Status, tt.status)
			}
			if tt.status == 101 {
				c.checkSwitched()
				_ = c.nc.Close()
			}
			o := srv.next(t)
			var he *HandshakeError
			switch {
			case tt.status == 101 && o.accept != nil:
				t.Errorf("Accept: %v", o.accept)
			case tt.status == 403 && (!errors.As(o.accept, &he) || he.Status != 403):
				t.Errorf("Accept error = %v, want a *HandshakeError with status 403", o.accept)
			}
		})
	}
}
