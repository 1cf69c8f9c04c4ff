package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// e2eSecret is the -jwt-secret of the token lifetime tests.
const e2eSecret = "e2e secret for token lifetimes, 32+ bytes"

// tokenFor returns claims for sub expiring at exp, signed with method and
// key, with kid in the header when not empty.
func tokenFor(t *testing.T, method jwt.SigningMethod, key any, kid, sub string, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, jwt.MapClaims{"sub": sub, "exp": exp.Unix()})
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing a %s token for %q: %v", method.Alg(), sub, err)
	}
	return s
}

// shortExpiry is an exp 2 to 3 s ahead, in whole seconds as JWTs have
// them: long enough to connect and act first, short enough to wait for.
func shortExpiry() time.Time { return time.Unix(time.Now().Unix()+3, 0) }

// nextError waits for the ERROR that ends sub's connection and returns
// its message header. go-stomp hands it to every subscription.
func nextError(t *testing.T, sub *stomp.Subscription) string {
	t.Helper()
	timer := time.NewTimer(clientTimeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription %s closed without an ERROR", sub.Destination())
			}
			if m.Err == nil {
				continue
			}
			if se, ok := m.Err.(*stomp.Error); ok {
				return se.Message
			}
			return m.Err.Error()
		case <-timer.C:
			t.Fatalf("no ERROR on %s within %v", sub.Destination(), clientTimeout)
		}
	}
}

// TestTokenExpiresMidSession: a session authenticated by a token that
// expires works until exp, then gets ERROR "token expired" and is closed,
// counted under its own close reason. The client is go-stomp over
// coder/websocket.
func TestTokenExpiresMidSession(t *testing.T) {
	base, _ := startApp(t, "-jwt-secret", e2eSecret, "-auth-required")
	exp := shortExpiry()
	c := dialStomp(t, wsURL(base), stomp.ConnOpt.Login("e2e", tokenFor(t, jwt.SigningMethodHS256, []byte(e2eSecret), "", "alice", exp)))
	sub := subscribe(t, c, "/topic/e2e.expiry")
	if err := c.Send("/topic/e2e.expiry", "text/plain", []byte("before exp"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND before exp: %v", err)
	}
	if got := string(nextMessage(t, sub).Body); got != "before exp" {
		t.Fatalf("got %q, want the message sent before exp", got)
	}

	if msg := nextError(t, sub); msg != "token expired" {
		t.Fatalf("ERROR message %q, want %q", msg, "token expired")
	}
	if now := time.Now(); now.Before(exp) {
		t.Errorf("session ended at %v, before its token's exp %v", now, exp)
	}
	if err := c.Send("/topic/e2e.expiry", "text/plain", []byte("after exp"), stomp.SendOpt.Receipt); err == nil {
		t.Error("SEND after the ERROR succeeded, want the connection closed")
	}
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)[`stompgate_sessions_closed_total{reason="token_expired"}`]; got != 1 {
			return fmt.Errorf("sessions closed for token_expired: %v, want 1", got)
		}
		return nil
	})
}

// TestTokenRefreshKeepsSession: two sessions share a token that expires
// in seconds. One sends a newer token for the same principal on a SEND
// before exp and outlives the other, which is ended at exp; the
// subscriber of that SEND never sees the token.
func TestTokenRefreshKeepsSession(t *testing.T) {
	base, _ := startApp(t, "-jwt-secret", e2eSecret)
	key := []byte(e2eSecret)
	short := tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", shortExpiry())
	newer := tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", time.Now().Add(time.Hour))

	listener := dialStomp(t, wsURL(base)) // anonymous: never expires
	msgs := subscribe(t, listener, "/topic/e2e.refresh")
	refreshed := dialStomp(t, wsURL(base), stomp.ConnOpt.Login("e2e", short))
	control := dialStomp(t, wsURL(base), stomp.ConnOpt.Login("e2e", short))
	controlSub := subscribe(t, control, "/topic/e2e.control")

	if err := refreshed.Send("/topic/e2e.refresh", "text/plain", []byte("refresh"),
		stomp.SendOpt.Receipt, stomp.SendOpt.Header("token", newer)); err != nil {
		t.Fatalf("SEND with a newer token: %v", err)
	}
	m := nextMessage(t, msgs)
	if got := m.Header.Get("token"); got != "" {
		t.Errorf("the subscriber got the sender's token header %q", got)
	}
	if string(m.Body) != "refresh" {
		t.Errorf("got body %q, want %q", m.Body, "refresh")
	}

	// The control session ends at the first exp: that exp has passed on
	// the server.
	if msg := nextError(t, controlSub); msg != "token expired" {
		t.Fatalf("control session: ERROR %q, want %q", msg, "token expired")
	}
	if err := refreshed.Send("/topic/e2e.refresh", "text/plain", []byte("after the first exp"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("refreshed session after the first exp: %v", err)
	}
	if got := string(nextMessage(t, msgs).Body); got != "after the first exp" {
		t.Errorf("got %q, want the message sent after the first exp", got)
	}
	disconnect(t, refreshed)
	// The control's end is counted when its close handshake is over,
	// which the client's view of it does not wait for.
	waitFor(t, 10*time.Second, func() error {
		if got := scrape(t, base)[`stompgate_sessions_closed_total{reason="token_expired"}`]; got != 1 {
			return fmt.Errorf("sessions closed for token_expired: %v, want 1 (the control)", got)
		}
		return nil
	})
}

// rawClient opens a WebSocket to base and sends CONNECT with token.
func rawClient(t *testing.T, base, token string) *frameClient {
	t.Helper()
	ws, resp, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, describe(resp))
	}
	c := stomptest.NewRaw(t, ws)
	c.Send(connectFrame(token))
	if f := c.Read(); f.Command != "CONNECTED" {
		t.Fatalf("got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	return c
}

// refreshFrame is the documented refresh carrier: an UNSUBSCRIBE of an id
// that is not subscribed, with a receipt and the token.
func refreshFrame(receipt, token string) string {
	return "UNSUBSCRIBE\nid:token-refresh\nreceipt:" + receipt + "\ntoken:" + token + "\n\n\x00"
}

// TestTokenRefreshFrames drives the documented carrier by hand: a valid
// refresh is answered with its RECEIPT; another principal's token, or a
// token with a bad signature, ends the session with ERROR and close 1008,
// counted as an authentication failure.
func TestTokenRefreshFrames(t *testing.T) {
	base, _ := startApp(t, "-jwt-secret", e2eSecret)
	key := []byte(e2eSecret)
	hour := time.Now().Add(time.Hour)
	alice := tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", hour)
	tests := []struct {
		name   string
		token  string
		detail string
	}{
		{"another principal", tokenFor(t, jwt.SigningMethodHS256, key, "", "bob", hour.Add(time.Hour)), `the token is for "bob"`},
		{"bad signature", tokenFor(t, jwt.SigningMethodHS256, []byte("not the server's secret, 32+ bytes"), "", "alice", hour.Add(time.Hour)), "signature is invalid"},
		{"expired", tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", time.Now().Add(-time.Minute)), "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rawClient(t, base, alice)
			c.Send(refreshFrame("ok", tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", hour.Add(time.Minute))))
			if f := c.Read(); f.Command != "RECEIPT" || f.Get("receipt-id") != "ok" {
				t.Fatalf("valid refresh: got %s %v, want RECEIPT ok", f.Command, f.Headers)
			}
			c.Send(refreshFrame("bad", tt.token))
			f := c.Read()
			if f.Command != "ERROR" || f.Get("message") != "invalid credentials" {
				t.Fatalf("got %s %v, want ERROR \"invalid credentials\"", f.Command, f.Headers)
			}
			if !strings.Contains(string(f.Body), tt.detail) {
				t.Errorf("ERROR body %q, want it to contain %q", f.Body, tt.detail)
			}
			expectClosed(t, c)
		})
	}
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)[`stompgate_sessions_closed_total{reason="auth_failed"}`]; got != float64(len(tests)) {
			return fmt.Errorf("sessions closed for auth_failed: %v, want %d", got, len(tests))
		}
		return nil
	})
}

// jwkOf is pub as a JWK with kid.
func jwkOf(kid string, pub *rsa.PublicKey) map[string]any {
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": enc(pub.N.Bytes()), "e": enc(big.NewInt(int64(pub.E)).Bytes())}
}

// TestRS256ViaJWKS: with -jwt-jwks-url, an RS256 token whose kid is in
// the provider's key set (served here by httptest) authenticates and is
// refreshed; one signed by another key, and an HS256 token made with the
// public key as its secret, are refused. The fetch is counted.
func TestRS256ViaJWKS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(map[string]any{"keys": []any{jwkOf("k1", &key.PublicKey)}})
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(idp.Close)
	// Every refused CONNECT below is a handshake of its own: each comes
	// from its own address, through the trusted proxy, so that the
	// handshake limiter lets them all in.
	base, _ := startApp(t, "-jwt-jwks-url", idp.URL+"/.well-known/jwks.json", "-auth-required", "-trusted-proxies", "127.0.0.1/32")

	hour := time.Now().Add(time.Hour)
	c := rawClient(t, base, tokenFor(t, jwt.SigningMethodRS256, key, "k1", "carol", hour))
	c.Send(refreshFrame("r1", tokenFor(t, jwt.SigningMethodRS256, key, "k1", "carol", hour.Add(time.Hour))))
	if f := c.Read(); f.Command != "RECEIPT" {
		t.Fatalf("RS256 refresh: got %s %v, want RECEIPT", f.Command, f.Headers)
	}
	sc := dialStomp(t, wsURL(base), stomp.ConnOpt.Login("e2e", tokenFor(t, jwt.SigningMethodRS256, key, "k1", "dave", hour)))
	disconnect(t, sc)

	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	ip := 0
	for name, tok := range map[string]string{
		"another key":               tokenFor(t, jwt.SigningMethodRS256, other, "k1", "carol", hour),
		"unknown kid":               tokenFor(t, jwt.SigningMethodRS256, other, "k2", "carol", hour),
		"HS256 over the PEM key":    tokenFor(t, jwt.SigningMethodHS256, pubPEM, "k1", "carol", hour),
		"HS256 over the DER key":    tokenFor(t, jwt.SigningMethodHS256, pubDER, "", "carol", hour),
		"RS256 past its exp":        tokenFor(t, jwt.SigningMethodRS256, key, "k1", "carol", time.Now().Add(-time.Minute)),
		"HS256 with no -jwt-secret": tokenFor(t, jwt.SigningMethodHS256, []byte(e2eSecret), "", "carol", hour),
	} {
		ip++
		c := dialFrom(t, base, fmt.Sprintf("10.0.1.%d", ip))
		c.Send(connectFrame(tok))
		if f := c.Read(); f.Command != "ERROR" || f.Get("message") != "invalid credentials" {
			t.Errorf("%s: got %s %v, want ERROR \"invalid credentials\"", name, f.Command, f.Headers)
		}
		expectClosed(t, c)
	}

	m := scrape(t, base)
	if got := m[`stompgate_jwks_fetches_total{result="ok"}`]; got < 1 {
		t.Errorf("JWKS fetches ok: %v, want at least 1", got)
	}
	if got := m[`stompgate_jwks_keys`]; got != 1 {
		t.Errorf("JWKS keys held: %v, want 1", got)
	}
}

// TestES256ViaPEMFile: with -jwt-public-key, an ES256 token of the key in
// the PEM file authenticates; a session that refreshes it survives the
// first exp, and one that does not ends at it.
func TestES256ViaPEMFile(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startApp(t, "-jwt-public-key", path, "-auth-required")

	short := tokenFor(t, jwt.SigningMethodES256, key, "", "erin", shortExpiry())
	kept := rawClient(t, base, short)
	ended := rawClient(t, base, short)
	kept.Send(refreshFrame("r1", tokenFor(t, jwt.SigningMethodES256, key, "", "erin", time.Now().Add(time.Hour))))
	if f := kept.Read(); f.Command != "RECEIPT" {
		t.Fatalf("ES256 refresh: got %s %v, want RECEIPT", f.Command, f.Headers)
	}
	if f := ended.Read(); f.Command != "ERROR" || f.Get("message") != "token expired" {
		t.Fatalf("unrefreshed session: got %s %v, want ERROR \"token expired\"", f.Command, f.Headers)
	}
	expectClosed(t, ended)
	kept.Send("SEND\ndestination:/topic/e2e.pem\nreceipt:r2\n\nstill here\x00")
	if f := kept.Read(); f.Command != "RECEIPT" || f.Get("receipt-id") != "r2" {
		t.Fatalf("refreshed session after the first exp: got %s %v, want RECEIPT r2", f.Command, f.Headers)
	}
}

// TestAuthSettingErrors: bad JWT settings stop start-up with an error
// naming the setting, and never repeat a JWKS URL that may hold
// credentials.
func TestAuthSettingErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "key.txt")
	if err := os.WriteFile(notPEM, []byte("ssh-rsa AAAA"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"auth required without keys", []string{"-auth-required"}, "-auth-required (WSSERVER_AUTH_REQUIRED) needs -jwt-secret"},
		{"both key sources", []string{"-jwt-public-key", notPEM, "-jwt-jwks-url", "https://idp.example/jwks"}, "-jwt-public-key (WSSERVER_JWT_PUBLIC_KEY) and -jwt-jwks-url"},
		{"missing PEM file", []string{"-jwt-public-key", filepath.Join(dir, "nope.pem")}, "-jwt-public-key"},
		{"file without PEM", []string{"-jwt-public-key", notPEM}, "no public key or certificate"},
		{"JWKS URL not http", []string{"-jwt-jwks-url", "ftp://user:pw-SECRET@idp.example/jwks"}, "-jwt-jwks-url (WSSERVER_JWT_JWKS_URL)"},
		{"JWKS URL relative", []string{"-jwt-jwks-url", "/jwks"}, "-jwt-jwks-url"},
		{"JWKS refresh too short", []string{"-jwt-jwks-refresh", "1s"}, "-jwt-jwks-refresh (WSSERVER_JWT_JWKS_REFRESH) 1s"},
		{"short HS256 secret", []string{"-jwt-secret", "seventeen bytes!!"}, "-jwt-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, tc.args...)
			err := runRecover(ctx, args, func(string) string { return "" })
			if err == nil {
				t.Fatalf("run %q: got nil error, want one naming %s", tc.args, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %q: got error %q, want it to contain %q", tc.args, err, tc.want)
			}
			if strings.Contains(err.Error(), "pw-SECRET") {
				t.Errorf("run %q: error %q repeats the URL's credentials", tc.args, err)
			}
		})
	}
}

// TestNoTokenInLogs runs the program at debug level and does what could
// put a token in a log line: handshakes whose URL carries access_token,
// one refused by the upgrade and one by the Origin check (whose error
// repeats the client's Origin header), CONNECTs accepted and refused,
// and a session ended at its token's exp. No line shows a token.
func TestNoTokenInLogs(t *testing.T) {
	var out syncWriter
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-log-level", "debug", "-jwt-secret", e2eSecret, "-policy", testPolicyFile(t)},
			func(string) string { return "" }, &out)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	var base string
	waitFor(t, clientTimeout, func() error {
		_, rest, ok := strings.Cut(out.String(), "msg=listening addr=")
		if !ok {
			return fmt.Errorf("no listening line yet in %q", out.String())
		}
		base = "http://" + strings.Fields(rest)[0]
		return nil
	})

	key := []byte(e2eSecret)
	good := tokenFor(t, jwt.SigningMethodHS256, key, "", "alice", shortExpiry())
	bad := tokenFor(t, jwt.SigningMethodHS256, []byte("another secret of 32 bytes or more"), "", "mallory", time.Now().Add(time.Hour))
	secrets := []string{good, bad, e2eSecret}

	// A plain GET of the endpoint: the upgrade fails.
	resp, err := http.Get(base + "/ws?access_token=" + bad)
	if err != nil {
		t.Fatalf("GET /ws: %v", err)
	}
	resp.Body.Close()
	// An Origin that is not a URL: the refusal repeats it.
	hctx, hcancel := context.WithTimeout(context.Background(), clientTimeout)
	defer hcancel()
	if ws, _, err := websocket.Dial(hctx, wsURL(base)+"?access_token="+bad, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"http://%zz/?access_token=" + bad + "&x=" + good}},
	}); err == nil {
		_ = ws.CloseNow()
		t.Fatal("handshake with a malformed Origin succeeded, want it refused")
	}
	// A refused CONNECT, its token in the URL.
	c := dialQuery(t, base, bad)
	c.Send("CONNECT\naccept-version:1.2\nhost:e2e\n\n\x00")
	if f := c.Read(); f.Command != "ERROR" {
		t.Fatalf("CONNECT with a bad token: got %s, want ERROR", f.Command)
	}
	expectClosed(t, c)
	// An accepted one that then expires.
	c = dialQuery(t, base, good)
	c.Send("CONNECT\naccept-version:1.2\nhost:e2e\nheart-beat:0,0\n\n\x00")
	if f := c.Read(); f.Command != "CONNECTED" || f.Get("user-name") != "alice" {
		t.Fatalf("CONNECT with a good token: got %s %v, want CONNECTED as alice", f.Command, f.Headers)
	}
	if f := c.Read(); f.Command != "ERROR" || f.Get("message") != "token expired" {
		t.Fatalf("got %s %v, want ERROR \"token expired\"", f.Command, f.Headers)
	}
	expectClosed(t, c)
	waitFor(t, clientTimeout, func() error {
		logs := out.String()
		for _, want := range []string{"reason=token_expired", "reason=auth_failed", "websocket accept failed"} {
			if !strings.Contains(logs, want) {
				return fmt.Errorf("no line with %q yet", want)
			}
		}
		return nil
	})
	logs := out.String()
	for i, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("secret %d appears in the log:\n%s", i, logs)
		}
	}
	if !strings.Contains(logs, "access_token=REDACTED") {
		t.Errorf("the Origin refusal was not logged with the token redacted:\n%s", logs)
	}
}

// dialQuery opens a WebSocket to base with token as access_token.
func dialQuery(t *testing.T, base, token string) *frameClient {
	t.Helper()
	ws, resp, err := dialWS(t, wsURL(base)+"?access_token="+token)
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, describe(resp))
	}
	return stomptest.NewRaw(t, ws)
}

// syncWriter is an io.Writer for the program's log, read while it runs.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
