package wsconn

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestBeforeWait checks that the hook runs each time the reader has read
// all that arrived, and before a pong, which can wait on a peer that does
// not read: what the hook writes comes ahead of the pong.
func TestBeforeWait(t *testing.T) {
	t.Parallel()
	srv := startEcho(t, serverConfig{setup: func(c *Conn) {
		n := 0
		c.SetBeforeWait(func() {
			n++
			_ = c.WriteMessage(MessageText, fmt.Appendf(nil, "wait %d", n))
		})
	}})
	c := dial(t, srv.addr)
	c.expect(serverFrame(finBit|fText, []byte("wait 1")))
	c.write(clientFrame(finBit|fPing, []byte("p")))
	c.expect(serverFrame(finBit|fText, []byte("wait 2")))
	c.expect(serverFrame(finBit|fPong, []byte("p")))
	c.expect(serverFrame(finBit|fText, []byte("wait 3")))
	c.write(clientFrame(finBit|fText, []byte("hi")))
	c.expect(serverFrame(finBit|fText, []byte("hi")))
	c.expect(serverFrame(finBit|fText, []byte("wait 4")))
	_ = c.nc.Close()
	srv.next(t)
}

// TestTryWriteReservedDoesNotWait: while another write holds the
// connection, blocked on a client that does not read, TryWriteReserved
// returns ErrWouldWait at once instead of waiting its turn.
func TestTryWriteReservedDoesNotWait(t *testing.T) {
	t.Parallel()
	tried := make(chan struct{})
	srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
		defer close(tried)
		go func() { _ = c.WriteMessage(MessageBinary, make([]byte, 64<<20)) }()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			buf := append(make([]byte, MaxHeaderLen), "x"...)
			if _, err := c.TryWriteReserved(MessageText, buf); errors.Is(err, ErrWouldWait) {
				return nil
			} else if err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return errors.New("TryWriteReserved never reported the connection held by a blocked write")
	}})
	c := dial(t, srv.addr)
	<-tried
	_ = c.nc.Close()
	if o := srv.next(t); o.beside != nil {
		t.Error(o.beside)
	}
}

// TestWritesDoNotAllocate: a write, waiting or not, allocates nothing.
// It runs alone (not in parallel), since allocations are counted across
// the process.
func TestWritesDoNotAllocate(t *testing.T) {
	result := make(chan string, 1)
	srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
		buf := make([]byte, MaxHeaderLen+100)
		waiting := testing.AllocsPerRun(100, func() { _ = c.WriteReserved(MessageText, buf) })
		trying := testing.AllocsPerRun(100, func() { _, _ = c.TryWriteReserved(MessageText, buf) })
		got := fmt.Sprintf("WriteReserved %.1f, TryWriteReserved %.1f", waiting, trying)
		result <- got
		if waiting != 0 || trying != 0 {
			return errors.New("allocations per write: " + got)
		}
		return nil
	}})
	c := dial(t, srv.addr)
	t.Log(<-result)
	_ = c.nc.Close()
	if o := srv.next(t); o.beside != nil {
		t.Error(o.beside)
	}
}
