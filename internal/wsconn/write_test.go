package wsconn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
)

func TestWriteReserved(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 125, 126, 511, 512, 513, 65535, 65536, 70000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			payload := pattern(n, byte(n))
			srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
				buf := make([]byte, MaxHeaderLen+n)
				copy(buf[MaxHeaderLen:], payload)
				if err := c.WriteReserved(MessageBinary, buf); err != nil {
					return err
				}
				return c.WriteMessage(MessageText, payload[:min(n, 3)])
			}})
			c := dial(t, srv.addr)
			c.expect(serverFrame(finBit|fBinary, payload))
			c.expect(serverFrame(finBit|fText, payload[:min(n, 3)]))
			_ = c.nc.Close()
			if o := srv.next(t); o.beside != nil {
				t.Error(o.beside)
			}
		})
	}
}

// TestConcurrentWrites checks that frames from writers running at once
// reach the client whole and each writer's in its order.
func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	const writers, each = 4, 100
	sizes := []int{10, 300, 2000} // below and above the copy-into-one-write bound
	srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for seq := range each {
					p := bytes.Repeat([]byte{byte(w)}, sizes[(w+seq)%len(sizes)])
					binary.BigEndian.PutUint16(p[1:], uint16(seq))
					var err error
					if seq%2 == 0 {
						err = c.WriteMessage(MessageBinary, p)
					} else {
						buf := append(make([]byte, MaxHeaderLen), p...)
						err = c.WriteReserved(MessageBinary, buf)
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d message %d: %w", w, seq, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}})
	c := dial(t, srv.addr)
	next := make([]int, writers)
	for range writers * each {
		f, err := c.readFrame()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if f.b0 != finBit|fBinary || len(f.payload) < 3 || int(f.payload[0]) >= writers {
			t.Fatalf("frame %#x %s", f.b0, short(f.payload))
		}
		w, seq := int(f.payload[0]), int(binary.BigEndian.Uint16(f.payload[1:]))
		if seq != next[w] {
			t.Fatalf("writer %d: message %d, want %d", w, seq, next[w])
		}
		next[w]++
		want := sizes[(w+seq)%len(sizes)]
		if len(f.payload) != want || bytes.Count(f.payload[3:], []byte{byte(w)}) != want-3 {
			t.Fatalf("writer %d message %d: %s, want %d bytes of %d", w, seq, short(f.payload), want, w)
		}
	}
	_ = c.nc.Close()
	if o := srv.next(t); o.beside != nil {
		t.Error(o.beside)
	}
}

func TestServerPing(t *testing.T) {
	t.Parallel()

	t.Run("answered", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
			defer cancel()
			return c.Ping(ctx)
		}})
		c := dial(t, srv.addr)
		f, err := c.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		if f.b0 != finBit|fPing {
			t.Fatalf("frame %#x %s, want a ping", f.b0, short(f.payload))
		}
		// A pong for another ping is ignored; this one wakes Ping.
		c.write(concat(
			clientFrame(finBit|fPong, append([]byte("x"), f.payload...)),
			clientFrame(finBit|fPong, f.payload)))
		// Ping returns before the connection ends; the outcome arrives
		// once the client closes.
		c.write(clientFrame(finBit|fText, []byte("after")))
		c.expect(serverFrame(finBit|fText, []byte("after")))
		_ = c.nc.Close()
		if o := srv.next(t); o.beside != nil {
			t.Errorf("Ping: %v", o.beside)
		}
	})

	t.Run("connection ends while waiting", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
			defer cancel()
			err := c.Ping(ctx)
			if !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Ping = %v, want net.ErrClosed", err)
			}
			if err := c.Ping(ctx); err == nil {
				return errors.New("Ping on a closed connection returned nil")
			}
			return nil
		}})
		c := dial(t, srv.addr)
		if f, err := c.readFrame(); err != nil || f.b0 != finBit|fPing {
			t.Fatalf("frame %#x, %v, want a ping", f.b0, err)
		}
		_ = c.nc.Close()
		if o := srv.next(t); o.beside != nil {
			t.Error(o.beside)
		}
	})
}
