package wsconn

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

var captureSeeds = flag.Bool("capture-seeds", false, "write the frames coder/websocket sends into testdata/fuzz/FuzzReader")

// coderScenarios are conversations a coder/websocket client holds with
// the echo server; the bytes it writes, after its handshake, are seeds
// for FuzzReader. want is what reading them gives.
var coderScenarios = []struct {
	name string
	run  func(ctx context.Context, ws *websocket.Conn) error
	want reading
}{
	{"coder-connect", func(ctx context.Context, ws *websocket.Conn) error {
		if err := ws.Write(ctx, websocket.MessageText, []byte(stompConnect)); err != nil {
			return err
		}
		return ws.Close(websocket.StatusNormalClosure, "bye")
	}, reading{msgs: []message{{MessageText, []byte(stompConnect)}}, end: 1000, peer: true, reason: "bye"}},

	{"coder-fragments", func(ctx context.Context, ws *websocket.Conn) error {
		w, err := ws.Writer(ctx, websocket.MessageText)
		if err != nil {
			return err
		}
		// A Write is a frame: the é is cut between two of them.
		for _, p := range []string{"SEND\ndestination:/topic/room.1\n\ncaf", "\xc3", "\xa9 au lait\x00"} {
			if _, err := w.Write([]byte(p)); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := ws.Ping(ctx); err != nil {
			return err
		}
		return ws.Close(websocket.StatusGoingAway, "")
	}, reading{msgs: []message{{MessageText, []byte("SEND\ndestination:/topic/room.1\n\ncafé au lait\x00")}}, end: 1001, peer: true}},

	{"coder-lengths", func(ctx context.Context, ws *websocket.Conn) error {
		for _, n := range []int{125, 126, 200, 65536} {
			if err := ws.Write(ctx, websocket.MessageBinary, pattern(n, byte(n))); err != nil {
				return err
			}
		}
		return ws.Close(4000, "partie terminée")
	}, reading{msgs: []message{
		{MessageBinary, pattern(125, 125)}, {MessageBinary, pattern(126, 126)},
		{MessageBinary, pattern(200, 200)}, {MessageBinary, pattern(65536, 0)},
	}, end: 4000, peer: true, reason: "partie terminée"}},
}

const stompConnect = "CONNECT\naccept-version:1.2,1.1,1.0\nhost:stompgate\nheart-beat:10000,10000\n\n\x00"

// TestCoderSeeds checks the seed files coder/websocket wrote read as the
// conversation that produced them; with -capture-seeds it first captures
// them again (mask keys differ each time).
func TestCoderSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if *captureSeeds {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range coderScenarios {
			b := captureCoder(t, s.run)
			file := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint16(%d)\nuint32(%d)\n", strconv.Quote(string(b)), len(b)/2, 128<<10-1)
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range coderScenarios {
		b, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			t.Fatalf("%v (capture the seeds with -capture-seeds)", err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a corpus file", s.name)
		}
		in, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := spec([]byte(in), 128<<10)
		got.pings = nil
		if !sameReading(got, s.want) {
			t.Errorf("%s reads as %+v, want %+v", s.name, got, s.want)
		}
	}
}

// captureCoder runs a coder/websocket client against the echo server
// through a relay that keeps what the client sends, and returns the bytes
// after the handshake.
func captureCoder(t *testing.T, run func(context.Context, *websocket.Conn) error) []byte {
	t.Helper()
	srv := startEcho(t, serverConfig{limit: 1 << 20})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var (
		sent  bytes.Buffer
		relay sync.WaitGroup
	)
	relay.Go(func() {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		defer client.Close()
		server, err := net.Dial("tcp", srv.addr)
		if err != nil {
			return
		}
		defer server.Close()
		var both sync.WaitGroup
		both.Go(func() {
			_, _ = io.Copy(client, server)
			_ = client.Close()
		})
		_, _ = io.Copy(io.MultiWriter(server, &sent), client)
		_ = server.Close()
		both.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String(), &websocket.DialOptions{
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		t.Fatalf("websocket.Dial: %v", err)
	}
	ws.SetReadLimit(1 << 20)
	// Pongs and the echoes reach the client only while it reads.
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	})
	if err := run(ctx, ws); err != nil {
		t.Fatalf("client: %v", err)
	}
	_ = ws.CloseNow()
	reader.Wait()
	relay.Wait()
	srv.next(t)
	_, frames, ok := bytes.Cut(sent.Bytes(), []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("no handshake in what the client sent")
	}
	return frames
}
