package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// typedMessage is one WebSocket message as a client received it.
type typedMessage struct {
	typ  websocket.MessageType
	data []byte
}

// watcher is a subscriber that reads every WebSocket message the server
// sends it, as a browser does, keeping each message's type, so a test can
// check that no text message is anything but UTF-8.
type watcher struct {
	ws   *websocket.Conn
	msgs chan typedMessage
	done chan error // the error that ended the reading
}

func watch(t *testing.T, url, dest string) *watcher {
	t.Helper()
	c := dialRaw(t, url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:0\ndestination:" + dest + "\nreceipt:sub\n\n\x00")
	c.Expect("RECEIPT")
	w := &watcher{ws: c.WS, msgs: make(chan typedMessage, 16), done: make(chan error, 1)}
	stop := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			typ, b, err := c.WS.Read(context.Background())
			if err != nil {
				w.done <- err
				close(w.msgs)
				return
			}
			select {
			case w.msgs <- typedMessage{typ, b}:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		_ = c.WS.CloseNow()
		<-ended
	})
	return w
}

// next returns the next message, failing the test if the connection ends
// or nothing comes within the timeout.
func (w *watcher) next(t *testing.T) typedMessage {
	t.Helper()
	select {
	case m, ok := <-w.msgs:
		if !ok {
			t.Fatalf("watcher's connection ended: %v", <-w.done)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("watcher got no message within 10s")
	}
	return typedMessage{}
}

// TestInvalidUTF8 sends what a browser would choke on, for real, from one
// client to a room another client is in: each attacker gets ERROR and a
// close (1007 for a text message that is not UTF-8), the close is counted
// as invalid_utf8, and the bystander only ever receives UTF-8 text
// messages, with a body that is not UTF-8 delivered in a binary message.
func TestInvalidUTF8(t *testing.T) {
	ts := startServer(t, Config{})
	room := "/topic/room.utf8"
	bystander := watch(t, ts.url, room)

	tests := []struct {
		name     string
		typ      websocket.MessageType
		frame    string
		wantCode websocket.StatusCode
	}{
		{"text message body not UTF-8", websocket.MessageText,
			"SEND\ndestination:" + room + "\n\ncaf\xe9\x00", websocket.StatusInvalidFramePayloadData},
		{"text message header not UTF-8", websocket.MessageText,
			"SEND\ndestination:" + room + "\nx-name:caf\xe9\n\nhi\x00", websocket.StatusInvalidFramePayloadData},
		{"binary message header not UTF-8", websocket.MessageBinary,
			"SEND\ndestination:" + room + "\nx-name:caf\xe9\n\nhi\x00", websocket.StatusPolicyViolation},
		{"binary message destination not UTF-8", websocket.MessageBinary,
			"SEND\ndestination:" + room + "\xff\n\nhi\x00", websocket.StatusPolicyViolation},
		{"binary message command not UTF-8", websocket.MessageBinary,
			"SE\xffND\ndestination:" + room + "\n\nhi\x00", websocket.StatusPolicyViolation},
		{"binary message receipt not UTF-8", websocket.MessageBinary,
			"SEND\ndestination:" + room + "\nreceipt:r\xc0\n\nhi\x00", websocket.StatusPolicyViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, ts.url)
			c.Connect()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := c.WS.Write(ctx, tt.typ, []byte(tt.frame)); err != nil {
				t.Fatalf("write: %v", err)
			}
			typ, b, err := c.WS.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for ERROR: %v", err)
			}
			if typ != websocket.MessageText || !utf8.Valid(b) {
				t.Errorf("ERROR came in a %v message, valid UTF-8 %v; want a UTF-8 text message", typ, utf8.Valid(b))
			}
			c.Dec.Feed(b)
			f, err := c.Dec.Next()
			if err != nil || f == nil || f.Command != stompframe.CommandError {
				t.Fatalf("got %v, %v; want an ERROR frame", f, err)
			}
			if got := f.Get("message"); got != "invalid UTF-8" {
				t.Errorf("ERROR message %q, want %q", got, "invalid UTF-8")
			}
			if _, ok := f.Lookup("receipt-id"); ok {
				t.Errorf("ERROR echoes a receipt-id the server could not read as UTF-8: %v", f.Headers)
			}
			if code := c.ExpectClosed(); code != tt.wantCode {
				t.Errorf("close status %v, want %v", code, tt.wantCode)
			}
		})
	}
	poll.Until(t, 5*time.Second, func() error {
		ts.obs.mu.Lock()
		defer ts.obs.mu.Unlock()
		if got := ts.obs.protocol[outcome.KindInvalidUTF8]; got != len(tests) {
			return fmt.Errorf("invalid_utf8 protocol closes %d, want %d (all: %v)", got, len(tests), ts.obs.protocol)
		}
		if got := ts.obs.closed[outcome.CloseProtocolError.String()]; got != len(tests) {
			return fmt.Errorf("protocol_error closes %d, want %d", got, len(tests))
		}
		return nil
	})

	// A body that is not UTF-8, sent in a binary message with UTF-8
	// headers, is a valid frame: it reaches the room in a binary message.
	// Then a UTF-8 message arrives as text. The bystander saw nothing of
	// the attacks before them.
	sender := dialRaw(t, ts.url)
	sender.Connect()
	binaryBody := "\xff\xfe\x00binary"
	frame := fmt.Sprintf("SEND\ndestination:%s\nx-player:\u00fcn\u00efc\u00f6d\u00e9\ncontent-length:%d\n\n%s\x00", room, len(binaryBody), binaryBody)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sender.WS.Write(ctx, websocket.MessageBinary, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
	sender.Send("SEND\ndestination:" + room + "\n\nstill here \u2713\x00")

	var bodies []string
	dec := stompframe.NewDecoder(stompframe.Limits{})
	for len(bodies) < 2 {
		m := bystander.next(t)
		if m.typ == websocket.MessageText && !utf8.Valid(m.data) {
			t.Fatalf("bystander got a text message that is not UTF-8: %q", m.data)
		}
		dec.Feed(m.data)
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatalf("bystander decode: %v", err)
			}
			if f == nil {
				break
			}
			if f.Command != stompframe.CommandMessage {
				t.Fatalf("bystander got %s %v", f.Command, f.Headers)
			}
			// The writer may pack a UTF-8 frame into a binary message
			// beside a binary one; never the other way round.
			if !utf8.Valid(f.Body) && m.typ != websocket.MessageBinary {
				t.Errorf("body %q came in a %v message, want a binary one", f.Body, m.typ)
			}
			bodies = append(bodies, string(f.Body))
		}
	}
	if want := []string{binaryBody, "still here \u2713"}; bodies[0] != want[0] || bodies[1] != want[1] {
		t.Errorf("bystander received bodies %q, want %q", bodies, want)
	}
}

// rejectWith is a stage that rejects every SEND with the given message
// and detail, as a stage quoting client bytes might.
type rejectWith struct{ message, detail string }

func (r rejectWith) Handle(_ *interceptor.Session, f *stompframe.Frame, _ time.Time) interceptor.Result {
	if f.Command != stompframe.CommandSend {
		return interceptor.Continue()
	}
	return interceptor.RejectFrame(outcome.RejectPermission, r.message, r.detail)
}

// TestErrorFrameIsUTF8 checks the ERROR frame and close reason the server
// builds from a stage's text that is not UTF-8: the client reads them in a
// text message that is valid UTF-8, with the bad bytes replaced.
func TestErrorFrameIsUTF8(t *testing.T) {
	long := strings.Repeat("\u00e9", 70) // 140 bytes: the close reason is cut
	ts := startServer(t, Config{Chain: interceptor.NewChain(nil, rejectWith{
		message: long + "\xff",
		detail:  "you sent caf\xe9",
	})})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SEND\ndestination:/topic/a\n\nhi\x00")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ, b, err := c.WS.Read(ctx)
	if err != nil {
		t.Fatalf("waiting for ERROR: %v", err)
	}
	if typ != websocket.MessageText || !utf8.Valid(b) {
		t.Fatalf("ERROR came in a %v message %q; want a UTF-8 text message", typ, b)
	}
	c.Dec.Feed(b)
	f, err := c.Dec.Next()
	if err != nil || f == nil {
		t.Fatalf("got %v, %v; want an ERROR frame", f, err)
	}
	if got, want := f.Get("message"), long+"\ufffd"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got, want := string(f.Body), "you sent caf\ufffd"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	_, _, err = c.WS.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("after ERROR: %v, want a close frame", err)
	}
	if !utf8.ValidString(ce.Reason) || len(ce.Reason) > 123 || !strings.HasPrefix(long, ce.Reason) || ce.Reason == "" {
		t.Errorf("close reason %q (%d bytes), want a UTF-8 prefix of the message of at most 123 bytes", ce.Reason, len(ce.Reason))
	}
}

// TestValidUTF8 checks the helpers that make server-built text UTF-8.
func TestValidUTF8(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"ASCII", "frame too large", "frame too large"},
		{"UTF-8", "caf\u00e9 \u2713", "caf\u00e9 \u2713"},
		{"lone byte", "caf\xe9", "caf\ufffd"},
		{"cut sequence", "a\xe2\x9c", "a\ufffd"},
		{"empty", "", ""},
	} {
		if got := validUTF8(tt.in); got != tt.want {
			t.Errorf("%s: validUTF8(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name, in string
		want     int
	}{
		{"short", "bye", 3},
		{"ASCII over", strings.Repeat("a", 200), 120},
		{"two-byte runes", strings.Repeat("\u00e9", 100), 120},
		{"three-byte runes after one byte", "a" + strings.Repeat("\u2713", 50), 118},
	} {
		got := closeText(tt.in)
		if len(got) != tt.want || !utf8.ValidString(got) {
			t.Errorf("%s: closeText gave %d bytes (valid UTF-8 %v), want %d", tt.name, len(got), utf8.ValidString(got), tt.want)
		}
	}
}
