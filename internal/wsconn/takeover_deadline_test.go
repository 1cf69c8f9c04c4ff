package wsconn

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"testing"
	"time"
)

// TestTakeoverTryWriteAfterDeadline: under context takeover, a
// TryWriteReserved whose write cannot start (the write deadline an
// earlier write left has passed) has already put its message in the
// compressor's window. It must keep the compressed message for Flush, in
// order, so that the peer inflates every message against the window the
// server compressed with.
func TestTakeoverTryWriteAfterDeadline(t *testing.T) {
	t.Parallel()
	msgs := [][]byte{text(600, 1), text(600, 1), text(600, 2)}
	ready := make(chan error, 1)
	srv := startEcho(t, serverConfig{opts: &AcceptOptions{Compression: &CompressionOptions{ContextTakeover: true}}, setup: func(c *Conn) {
		c.SetWriteTimeout(20 * time.Millisecond)
		if err := c.WriteMessage(MessageText, msgs[0]); err != nil {
			ready <- err
			return
		}
		// The first write's deadline passes.
		time.Sleep(100 * time.Millisecond)
		sent, err := c.TryWriteReserved(MessageText, append(make([]byte, MaxHeaderLen), msgs[1]...))
		if errors.Is(err, ErrWouldWait) {
			// Without a descriptor (the portable build) a try never
			// writes, and nothing went into the compressor: the caller
			// writes the message the blocking way, as the server does.
			sent, err = true, c.WriteReserved(MessageText, append(make([]byte, MaxHeaderLen), msgs[1]...))
		}
		if err != nil {
			ready <- errFmt("TryWriteReserved after the deadline: %v, want the message kept", err)
			return
		}
		if !sent {
			if err := c.Flush(); err != nil {
				ready <- errFmt("Flush: %v", err)
				return
			}
		}
		ready <- c.WriteMessage(MessageText, msgs[2])
	}})
	c := dial(t, srv.addr, "Sec-WebSocket-Extensions: permessage-deflate")
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	var hist []byte
	for i, want := range msgs {
		f, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		dict := hist[max(0, len(hist)-32768):]
		got, err := io.ReadAll(flate.NewReaderDict(io.MultiReader(bytes.NewReader(f.payload), bytes.NewReader([]byte{0, 0, 0xff, 0xff})), dict))
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("message %d: inflating: %v", i, err)
		}
		if f.b0 != finBit|rsv1Bit|fText || !bytes.Equal(got, want) {
			t.Fatalf("message %d: frame %#x inflates to %s, want %s", i, f.b0, short(got), short(want))
		}
		hist = append(hist, got...)
	}
	c.write(clientFrame(finBit|fClose, closeBody(1000, "")))
	c.expectClose(1000)
	srv.next(t)
}
