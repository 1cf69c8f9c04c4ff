package wsconn

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// benchPeer is the server side of one connection, from either package.
type benchPeer struct {
	// read returns the length of the next message.
	read  func() (int, error)
	write func(p []byte) error
	close func()
}

// wsconnPeer accepts with this package.
func wsconnPeer(w http.ResponseWriter, r *http.Request) (benchPeer, error) {
	c, err := Accept(w, r, nil)
	if err != nil {
		return benchPeer{}, err
	}
	return benchPeer{
		read: func() (int, error) {
			_, p, err := c.ReadMessage()
			return len(p), err
		},
		write: func(p []byte) error { return c.WriteMessage(MessageText, p) },
		close: func() { _ = c.CloseNow() },
	}, nil
}

// coderPeer accepts with coder/websocket and reads each message whole
// into one reused buffer, its cheapest way to get a message in memory.
func coderPeer(w http.ResponseWriter, r *http.Request) (benchPeer, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return benchPeer{}, err
	}
	ctx := context.Background()
	buf := make([]byte, 4<<10)
	return benchPeer{
		read: func() (int, error) {
			_, rd, err := c.Reader(ctx)
			if err != nil {
				return 0, err
			}
			n := 0
			for {
				if n == len(buf) {
					buf = append(buf, make([]byte, len(buf))...)
				}
				m, err := rd.Read(buf[n:])
				n += m
				if errors.Is(err, io.EOF) {
					return n, nil
				}
				if err != nil {
					return n, err
				}
			}
		},
		write: func(p []byte) error { return c.Write(ctx, websocket.MessageText, p) },
		close: func() { _ = c.CloseNow() },
	}, nil
}

var benchPeers = []struct {
	name   string
	accept func(http.ResponseWriter, *http.Request) (benchPeer, error)
}{
	{"wsconn", wsconnPeer},
	{"coder", coderPeer},
}

// benchConn connects a raw client over loopback TCP to a server that
// accepts with accept, and returns both ends. Everything is closed when
// the benchmark ends.
func benchConn(b *testing.B, accept func(http.ResponseWriter, *http.Request) (benchPeer, error)) (*rawClient, benchPeer) {
	b.Helper()
	peers := make(chan benchPeer, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := accept(w, r)
		if err != nil {
			b.Errorf("accept: %v", err)
			close(peers)
			return
		}
		peers <- p
		// The handler owns the connection until the benchmark is done
		// with it.
		<-release
		p.close()
	}))
	b.Cleanup(srv.Close)
	c := dial(b, strings.TrimPrefix(srv.URL, "http://"))
	_ = c.nc.SetDeadline(time.Time{})
	p, ok := <-peers
	if !ok {
		b.FailNow()
	}
	b.Cleanup(func() { close(release) })
	return c, p
}

// BenchmarkReadOneFramePerMessage reads 150-byte text messages, each one
// masked frame, that a client writes over loopback TCP ten frames to a
// write. One op is one message.
func BenchmarkReadOneFramePerMessage(b *testing.B) {
	const size, perWrite = 150, 10
	var chunk []byte
	for i := range perWrite {
		chunk = append(chunk, clientFrame(finBit|fText, text(size, byte(i)))...)
	}
	frameLen := len(chunk) / perWrite
	for _, peer := range benchPeers {
		b.Run(peer.name, func(b *testing.B) {
			c, p := benchConn(b, peer.accept)
			b.ReportAllocs()
			b.SetBytes(size)
			b.ResetTimer()
			wrote := make(chan error, 1)
			go func() {
				var err error
				for left := b.N; left > 0 && err == nil; left -= perWrite {
					_, err = c.nc.Write(chunk[:min(left, perWrite)*frameLen])
				}
				wrote <- err
			}()
			for i := 0; i < b.N; i++ {
				n, err := p.read()
				if err != nil || n != size {
					b.Fatalf("message %d: %d bytes, %v", i, n, err)
				}
			}
			b.StopTimer()
			if err := <-wrote; err != nil {
				b.Fatalf("client write: %v", err)
			}
		})
	}
}

// BenchmarkWriteMessage writes 100-byte text messages to a client that
// reads and discards them. One op is one message.
func BenchmarkWriteMessage(b *testing.B) {
	const size = 100
	msg := text(size, 0)
	for _, peer := range benchPeers {
		b.Run(peer.name, func(b *testing.B) {
			benchWrite(b, peer.accept, size, func(p benchPeer) error { return p.write(msg) })
		})
	}
	b.Run("wsconn-reserved", func(b *testing.B) {
		buf := make([]byte, MaxHeaderLen+size)
		benchWrite(b, reservedPeer, size, func(p benchPeer) error {
			copy(buf[MaxHeaderLen:], msg)
			return p.write(buf)
		})
	})
}

// reservedPeer accepts with this package; its write sends with
// WriteReserved, so the buffer it is given starts with MaxHeaderLen bytes
// of room.
func reservedPeer(w http.ResponseWriter, r *http.Request) (benchPeer, error) {
	c, err := Accept(w, r, nil)
	if err != nil {
		return benchPeer{}, err
	}
	return benchPeer{
		write: func(buf []byte) error { return c.WriteReserved(MessageText, buf) },
		close: func() { _ = c.CloseNow() },
	}, nil
}

// benchWrite runs write b.N times while the client discards what arrives.
func benchWrite(b *testing.B, accept func(http.ResponseWriter, *http.Request) (benchPeer, error), size int, write func(benchPeer) error) {
	c, p := benchConn(b, accept)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, c.br)
	}()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := write(p); err != nil {
			b.Fatalf("message %d: %v", i, err)
		}
	}
	b.StopTimer()
	_ = c.nc.Close()
	<-drained
}
