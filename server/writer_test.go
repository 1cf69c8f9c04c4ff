package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/stompframe"
)

// backlog subscribes a raw client that does not read, publishes messages
// of size bytes to it, n at a time, until the server holds some of them
// queued (the socket buffers, which the kernel sizes as it likes, are
// full), then reads every WebSocket message and returns their sizes and
// the frames each carried.
func backlog(t *testing.T, n, size int) (sizes, frames []int) {
	t.Helper()
	ts := startServer(t, Config{OutboundQueue: 1 << 20, OutboundBytes: 1 << 30, WriteTimeout: time.Minute})
	sub := dialRaw(t, ts.url)
	id := sub.Connect().Get("session")
	sub.Send("SUBSCRIBE\nid:0\ndestination:/topic/w\nreceipt:s\n\n\x00")
	sub.Expect("RECEIPT")
	pub := dialRaw(t, ts.url)
	pub.Connect()
	body := strings.Repeat("b", size)
	sent := 0
	for round := 0; ; round++ {
		if round == 40 {
			t.Fatalf("%d messages published and none held: the socket never filled", sent)
		}
		var msg strings.Builder
		for i := range n {
			fmt.Fprintf(&msg, "SEND\ndestination:/topic/w\n\n%s\x00", body)
			if msg.Len() > 32<<10 || i == n-1 {
				pub.Send(msg.String())
				msg.Reset()
			}
		}
		sent += n
		// The publisher's receipt says every SEND before it was handled.
		pub.Send("SEND\ndestination:/topic/other\nreceipt:r\n\n\x00")
		pub.Expect("RECEIPT")
		if f, _ := ts.held(t, id); f > 0 {
			break
		}
	}
	n = sent
	dec := stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: 1 << 20})
	got := 0
	for got < n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := sub.WS.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", got, n, err)
		}
		sizes = append(sizes, len(b))
		dec.Feed(b)
		k := 0
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				break
			}
			if f.Command != "MESSAGE" || len(f.Body) != size {
				t.Fatalf("frame %s with a %d-byte body", f.Command, len(f.Body))
			}
			k++
		}
		if dec.Buffered() != 0 {
			t.Fatalf("a WebSocket message of %d bytes ends inside a frame: frames must not be split", len(b))
		}
		frames = append(frames, k)
		got += k
	}
	return sizes, frames
}

// TestWriterBatchSizeFlush: small frames are packed into WebSocket
// messages that stop growing once they reach writeBatchSize.
func TestWriterBatchSizeFlush(t *testing.T) {
	sizes, frames := backlog(t, 3000, 1000)
	packed := false
	for i, n := range sizes {
		if n > writeBatchSize+1200 {
			t.Fatalf("message %d is %d bytes: past the batch size %d by more than one frame", i, n, writeBatchSize)
		}
		if frames[i] > 1 && n >= writeBatchSize {
			packed = true
		}
	}
	if !packed {
		t.Fatalf("no message reached the batch size with many frames: sizes %v", sizes)
	}
}

// TestWriterOverflowFlush: a frame that would overflow the batch buffer is
// sent in the next WebSocket message rather than growing the buffer.
func TestWriterOverflowFlush(t *testing.T) {
	const size = 10 << 10
	sizes, frames := backlog(t, 300, size)
	overflowed := false
	for i, n := range sizes {
		if n > writeBatchSize+4096 && frames[i] > 1 {
			t.Fatalf("message %d is %d bytes with %d frames: the batch buffer grew", i, n, frames[i])
		}
		// Three 10 KiB frames are under writeBatchSize; the fourth
		// would pass the buffer's capacity and goes to the next message.
		if frames[i] == 3 {
			overflowed = true
		}
	}
	if !overflowed {
		t.Fatalf("no message stopped short of the batch size for an overflow: frames per message %v", frames)
	}
}

// TestShutdownDeadlineAborts: a session whose client never reads cannot
// finish its close handshake; when Shutdown's context ends, the server
// drops the connection and returns the context's error, with no session
// left behind.
func TestShutdownDeadlineAborts(t *testing.T) {
	ts := startServer(t, Config{WriteTimeout: time.Minute})
	srv := ts.Server
	stuck := dialRaw(t, ts.url)
	stuck.Connect()
	stuck.Send("SUBSCRIBE\nid:0\ndestination:/topic/big\nreceipt:s\n\n\x00")
	stuck.Expect("RECEIPT")
	pub := dialRaw(t, ts.url)
	pub.Connect()
	body := bytes.Repeat([]byte("x"), 60<<10)
	for range 200 {
		pub.Send("SEND\ndestination:/topic/big\n\n" + string(body) + "\x00")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline's error", err)
	}
	if n := srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions left after Shutdown returned", n)
	}
	// The stuck client sees its connection dropped, not closed cleanly.
	_, _, rerr := stuck.WS.Read(context.Background())
	for rerr == nil {
		_, _, rerr = stuck.WS.Read(context.Background())
	}
	if code := websocket.CloseStatus(rerr); code == websocket.StatusGoingAway {
		t.Fatalf("the stuck session completed a close handshake (%v); want the connection dropped", rerr)
	}
}
