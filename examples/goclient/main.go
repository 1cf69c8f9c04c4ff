// Command goclient is a complete STOMP-over-WebSocket client for
// stompgate, in Go: it connects with heart-beats (and a token when given
// one), subscribes to a destination, prints every MESSAGE, sends each line
// it reads from standard input, and on Ctrl-C (or the end of its input)
// disconnects cleanly, waiting for the server's RECEIPT.
//
//	go run ./examples/goclient -url ws://127.0.0.1:8080/ws -dest /topic/chat.lobby
//
// It uses github.com/coder/websocket for the socket and
// github.com/go-stomp/stomp/v3 for STOMP, with the socket wrapped so that
// binary messages (bodies that are not UTF-8) are read like text ones
// (see wsStream).
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	url         string
	dest        string
	sendDest    string
	token       string
	tokenHeader bool
	heartBeat   time.Duration
	timeout     time.Duration
}

func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("goclient", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.url, "url", "ws://127.0.0.1:8080/ws", "the server's WebSocket URL")
	fs.StringVar(&o.dest, "dest", "/topic/chat.lobby", "destination to subscribe to")
	fs.StringVar(&o.sendDest, "send-dest", "", "destination of the lines read from standard input (default: -dest)")
	fs.StringVar(&o.token, "token", os.Getenv("STOMP_TOKEN"), "JWT sent at CONNECT (default $STOMP_TOKEN; empty: anonymous)")
	fs.BoolVar(&o.tokenHeader, "token-header", false, "send the token as an Authorization: Bearer header instead of the passcode")
	fs.DurationVar(&o.heartBeat, "heart-beat", 10*time.Second, "heart-beat interval asked for in both directions (0: none)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound on the handshake, CONNECT and every RECEIPT")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.sendDest == "" {
		o.sendDest = o.dest
	}
	if o.heartBeat < 0 || o.timeout <= 0 {
		return o, errors.New("-heart-beat must not be negative and -timeout must be positive")
	}
	return o, nil
}

// run is the client: it returns nil after a clean DISCONNECT, when ctx
// ends or in reaches its end, and an error when the connection fails or
// the server ends the session.
func run(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	conn, err := dial(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "connected: session %s, server %s\n", conn.Session(), conn.Server())

	sub, err := conn.Subscribe(o.dest, stomp.AckAuto)
	if err != nil {
		_ = conn.MustDisconnect()
		return fmt.Errorf("SUBSCRIBE %s: %w", o.dest, err)
	}
	fmt.Fprintf(out, "subscribed to %s\n", o.dest)

	lines := make(chan string)
	go readLines(in, lines)
	for {
		select {
		case <-ctx.Done():
			return disconnect(conn, out)
		case line, ok := <-lines:
			if !ok {
				return disconnect(conn, out)
			}
			if err := conn.Send(o.sendDest, "text/plain", []byte(line), stomp.SendOpt.Receipt); err != nil {
				_ = conn.MustDisconnect()
				// The server drops SENDs over its per-session limit
				// (20 a second by default) without a RECEIPT.
				return fmt.Errorf("SEND %s (no RECEIPT: lines faster than the server's send limit are dropped unanswered): %w", o.sendDest, err)
			}
		case m, ok := <-sub.C:
			if !ok {
				_ = conn.MustDisconnect()
				return errors.New("the subscription ended")
			}
			if m.Err != nil {
				// The server sent ERROR (its body says why) or the
				// connection failed.
				_ = conn.MustDisconnect()
				return m.Err
			}
			printMessage(out, m)
		}
	}
}

// dial opens the WebSocket, asking for STOMP 1.2, and sends CONNECT.
func dial(ctx context.Context, o options) (*stomp.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, o.url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		if resp != nil {
			// 429 and 503 carry a Retry-After: honour it before
			// dialling again.
			return nil, fmt.Errorf("dial %s: %s (Retry-After %q): %w", o.url, resp.Status, resp.Header.Get("Retry-After"), err)
		}
		return nil, fmt.Errorf("dial %s: %w", o.url, err)
	}
	opts := []func(*stomp.Conn) error{
		stomp.ConnOpt.HeartBeat(o.heartBeat, o.heartBeat),
		stomp.ConnOpt.ReadChannelCapacity(64),
		stomp.ConnOpt.RcvReceiptTimeout(o.timeout),
		stomp.ConnOpt.DisconnectReceiptTimeout(o.timeout),
		stomp.ConnOpt.Logger(quietLogger{}),
	}
	switch {
	case o.token != "" && o.tokenHeader:
		opts = append(opts, stomp.ConnOpt.Header("Authorization", "Bearer "+o.token))
	case o.token != "":
		opts = append(opts, stomp.ConnOpt.Login("", o.token))
	}
	conn, err := stomp.Connect(newStream(ws), opts...)
	if err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("CONNECT: %w", err)
	}
	return conn, nil
}

// disconnect sends DISCONNECT with a receipt and waits for the RECEIPT,
// which the server sends once it has handled every frame before it.
func disconnect(conn *stomp.Conn, out io.Writer) error {
	if err := conn.Disconnect(); err != nil {
		_ = conn.MustDisconnect()
		return fmt.Errorf("DISCONNECT: %w", err)
	}
	fmt.Fprintln(out, "disconnected")
	return nil
}

// readLines sends each line of in to lines and closes it at the end.
func readLines(in io.Reader, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		lines <- sc.Text()
	}
}

// printMessage prints one MESSAGE: its body as text when it is UTF-8,
// as base64 when it is binary.
func printMessage(out io.Writer, m *stomp.Message) {
	if utf8.Valid(m.Body) {
		fmt.Fprintf(out, "%s text: %s\n", m.Destination, m.Body)
		return
	}
	fmt.Fprintf(out, "%s binary (%d bytes): %s\n", m.Destination, len(m.Body), base64.StdEncoding.EncodeToString(m.Body))
}

// quietLogger keeps go-stomp's warnings and errors on standard error and
// drops its debug and info lines.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)       {}
func (quietLogger) Infof(string, ...any)        {}
func (quietLogger) Warningf(f string, v ...any) { fmt.Fprintf(os.Stderr, "stomp: "+f+"\n", v...) }
func (quietLogger) Errorf(f string, v ...any)   { fmt.Fprintf(os.Stderr, "stomp: "+f+"\n", v...) }
func (quietLogger) Debug(string)                {}
func (quietLogger) Info(string)                 {}
func (quietLogger) Warning(msg string)          { fmt.Fprintln(os.Stderr, "stomp: "+msg) }
func (quietLogger) Error(msg string)            { fmt.Fprintln(os.Stderr, "stomp: "+msg) }
