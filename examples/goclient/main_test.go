package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/examples/internal/wsservertest"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/syncbuf"
)

// stepTimeout bounds each step of the tests; reaching it means the step
// is stuck.
const stepTimeout = 20 * time.Second

// TestMain fails the package if a test leaves a goroutine behind: the
// client's reader, writer and heart-beats end with its DISCONNECT.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitOutput waits until out holds want.
func waitOutput(t *testing.T, out *syncbuf.Buffer, want string) {
	t.Helper()
	poll.Until(t, stepTimeout, func() error {
		if !strings.Contains(out.String(), want) {
			return fmt.Errorf("no %q in the client's output:\n%s", want, out.String())
		}
		return nil
	})
}

// TestClient runs the example client against a real wsserver process:
// it connects with heart-beats, subscribes, and prints a text body and a
// binary one (published through the server API; the server sends the
// binary one in a binary WebSocket message) and stays connected to print
// the next; a line on its input comes back through the server; Ctrl-C
// (its context ending) disconnects with a RECEIPT and returns nil.
func TestClient(t *testing.T) {
	srv := wsservertest.Start(t)
	const dest = "/topic/chat.lobby"
	in, typed := io.Pipe()
	defer typed.Close()
	var out syncbuf.Buffer
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-url", srv.WS, "-dest", dest, "-heart-beat", "1s"}, in, &out) }()

	waitOutput(t, &out, "subscribed to "+dest)
	// The subscription is in place once a publish reaches it.
	poll.Until(t, stepTimeout, func() error {
		if n := srv.Publish(t, dest, []byte("probe"), false); n != 1 {
			return fmt.Errorf("the probe reached %d subscribers, want 1", n)
		}
		return nil
	})
	waitOutput(t, &out, dest+" text: probe\n")

	srv.Publish(t, dest, []byte("hello, 世界"), false)
	binary := []byte{0x00, 0x01, 0xff, 0xfe, 'x'}
	srv.Publish(t, dest, binary, true)
	srv.Publish(t, dest, []byte("still here"), false)
	waitOutput(t, &out, dest+" text: hello, 世界\n")
	waitOutput(t, &out, fmt.Sprintf("%s binary (%d bytes): %s\n", dest, len(binary), base64.StdEncoding.EncodeToString(binary)))
	waitOutput(t, &out, dest+" text: still here\n")

	if _, err := io.WriteString(typed, "typed line\n"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, &out, dest+" text: typed line\n")

	interrupt()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(stepTimeout):
		t.Fatalf("run did not return after Ctrl-C:\n%s", out.String())
	}
	if !strings.HasSuffix(out.String(), "disconnected\n") {
		t.Fatalf("output does not end with the DISCONNECT's receipt:\n%s", out.String())
	}
}

// TestTextNetConnDropsBinary shows why the client does not use
// websocket.NetConn with MessageText, as a shorter program might: the
// first binary body the server sends ends its connection.
func TestTextNetConnDropsBinary(t *testing.T) {
	srv := wsservertest.Start(t)
	const dest = "/topic/chat.binary"
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, srv.WS, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	conn, err := stomp.Connect(websocket.NetConn(context.Background(), ws, websocket.MessageText),
		stomp.ConnOpt.HeartBeat(0, 0), stomp.ConnOpt.Logger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.MustDisconnect()
	sub, err := conn.Subscribe(dest, stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, stepTimeout, func() error {
		if n := srv.Publish(t, dest, []byte{0xff}, true); n != 1 {
			return fmt.Errorf("reached %d subscribers, want 1", n)
		}
		return nil
	})
	select {
	case m, ok := <-sub.C:
		if ok && m.Err == nil {
			t.Fatalf("a text-only stream read the binary MESSAGE %q", m.Body)
		}
	case <-time.After(stepTimeout):
		t.Fatal("the text-only stream neither failed nor read the binary MESSAGE")
	}
}

// TestClientToken connects with a JWT, as the passcode and as an
// Authorization header, to a server that requires one: the session is
// the token's principal (the server API lists it under that name).
func TestClientToken(t *testing.T) {
	const secret = "a-secret-of-at-least-32-bytes-for-hs256"
	srv := wsservertest.Start(t, "-jwt-secret", secret, "-auth-required")
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "alice", "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{{"-token", tok}, {"-token", tok, "-token-header"}} {
		in, typed := io.Pipe()
		var out syncbuf.Buffer
		ctx, interrupt := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, append([]string{"-url", srv.WS, "-heart-beat", "0"}, mode...), in, &out) }()
		waitOutput(t, &out, "subscribed to ")
		var list struct {
			Sessions []struct {
				Principal string `json:"principal"`
			} `json:"sessions"`
		}
		srv.API(t, http.MethodGet, "/api/v1/sessions?principal=alice", nil, http.StatusOK, &list)
		if len(list.Sessions) != 1 {
			t.Errorf("%q: the API lists %d sessions of alice, want 1", mode[2:], len(list.Sessions))
		}
		interrupt()
		if err := <-done; err != nil {
			t.Errorf("%q: %v\n%s", mode[2:], err, out.String())
		}
		typed.Close()
	}
	// Without a token the server refuses the CONNECT.
	in, typed := io.Pipe()
	defer typed.Close()
	var out syncbuf.Buffer
	if err := run(context.Background(), []string{"-url", srv.WS, "-heart-beat", "0"}, in, &out); err == nil {
		t.Fatalf("connected without a token to a server that requires one:\n%s", out.String())
	}
}
