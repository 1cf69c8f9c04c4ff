package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/stompframe"
)

// Limits of the client side, each with its reason.
const (
	// dialTimeout bounds the WebSocket handshake plus CONNECT/CONNECTED.
	dialTimeout = 10 * time.Second
	// writeTimeout bounds one WebSocket write outside the hot path (a
	// SUBSCRIBE, a heart-beat); hot-path writes are unblocked by closing
	// the connection when the run ends.
	writeTimeout = 5 * time.Second
	// readLimit bounds one inbound WebSocket message. A server may pack
	// many frames into one message (wsserver packs up to 32 KiB plus one
	// frame); 16 MiB leaves room for any server and still bounds memory.
	readLimit = 16 << 20
	// maxBatchBytes bounds the SEND frames packed into one WebSocket
	// message: wsserver's read limit is its 64 KiB frame limit.
	maxBatchBytes = 32 << 10
)

// subprotocols are offered in the handshake, most preferred first.
var subprotocols = stompframe.Subprotocols()

// dialer opens STOMP sessions to one target.
type dialer struct {
	url      string
	host     string // CONNECT host header
	login    string
	passcode string
	// header is sent with the handshake; nil sends none. Attacks that
	// speak for several addresses set X-Forwarded-For here.
	header http.Header
}

func newDialer(c *common) *dialer {
	host := c.host
	if host == "" {
		host = hostOf(c.url)
	}
	return &dialer{url: c.url, host: host, login: c.login, passcode: c.passcode}
}

// httpClientFrom returns an HTTP client whose connections leave from
// local, so the server sees that source address; nil when local is not
// valid (the system picks).
func httpClientFrom(local netip.Addr) *http.Client {
	if !local.IsValid() {
		return nil
	}
	d := &net.Dialer{
		LocalAddr: &net.TCPAddr{IP: local.AsSlice()},
		Timeout:   dialTimeout,
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Second,
	}}
}

// stompConn is one STOMP session over a WebSocket, with the buffers its
// hot paths reuse. Its read side belongs to one goroutine and its write
// side to one goroutine at a time.
type stompConn struct {
	ws      *websocket.Conn
	version stompframe.Version
	dec     *stompframe.Decoder
	rbuf    []byte // last inbound message, reused
	wbuf    []byte // outbound message under construction, reused
	// lastType is the WebSocket type of the last inbound message.
	lastType websocket.MessageType
	// userName is the CONNECTED frame's user-name header: the session's
	// principal.
	userName string
}

// errorFrame is a STOMP ERROR frame received from the server.
type errorFrame struct{ message string }

func (e *errorFrame) Error() string { return "ERROR frame: " + e.message }

// dial opens a WebSocket (from local, when valid, through client) and
// exchanges CONNECT/CONNECTED, offering heartBeat ("cx,cy" in ms).
func (d *dialer) dial(ctx context.Context, client *http.Client, heartBeat string) (*stompConn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, d.url, &websocket.DialOptions{
		HTTPClient:   client,
		Subprotocols: subprotocols,
		HTTPHeader:   d.header,
	})
	if err != nil {
		if resp != nil {
			return nil, &handshakeError{status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	ws.SetReadLimit(readLimit)
	c := &stompConn{ws: ws, version: stompframe.V12, dec: stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: readLimit})}
	f := stompframe.Frame{Command: stompframe.CommandConnect}
	f.Add("accept-version", "1.0,1.1,1.2")
	f.Add("host", d.host)
	if d.login != "" {
		f.Add("login", d.login)
	}
	if d.passcode != "" {
		f.Add("passcode", d.passcode)
	}
	f.Add("heart-beat", heartBeat)
	c.wbuf = stompframe.Append(c.wbuf[:0], &f, stompframe.V12)
	if err := ws.Write(ctx, websocket.MessageText, c.wbuf); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("sending CONNECT: %w", err)
	}
	reply, err := c.await(ctx, stompframe.CommandConnected, "")
	if err != nil {
		ws.CloseNow()
		return nil, err
	}
	switch reply {
	case "1.0":
		c.version = stompframe.V10
	case "1.1":
		c.version = stompframe.V11
	}
	c.dec.SetVersion(c.version)
	return c, nil
}

// handshakeError is a refused WebSocket handshake, with the HTTP status.
type handshakeError struct {
	status int
	err    error
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("handshake refused with HTTP %d: %v", e.status, e.err)
}

func (e *handshakeError) Unwrap() error { return e.err }

// await reads frames until one with command arrives (and, for RECEIPT,
// one whose receipt-id is any of ids); it returns the CONNECTED version
// header. An ERROR frame ends the wait with an *errorFrame. Other frames
// are skipped.
func (c *stompConn) await(ctx context.Context, command string, ids ...string) (string, error) {
	for {
		msg, err := c.readMessage(ctx)
		if err != nil {
			return "", fmt.Errorf("waiting for %s: %w", command, err)
		}
		c.dec.Feed(msg)
		for {
			f, err := c.dec.Next()
			if err != nil {
				return "", fmt.Errorf("waiting for %s: %w", command, err)
			}
			if f == nil {
				break
			}
			switch {
			case f.Command == stompframe.CommandError:
				return "", &errorFrame{message: f.Get("message")}
			case f.Command != command:
			case command == stompframe.CommandReceipt && !slices.Contains(ids, f.Get("receipt-id")):
			default:
				v := f.Get("version")
				if f.Command == stompframe.CommandConnected {
					c.userName = f.Get("user-name")
				}
				// Drain the rest of the message so the Decoder lets go of it.
				for g, _ := c.dec.Next(); g != nil; g, _ = c.dec.Next() {
				}
				return v, nil
			}
		}
	}
}

// readMessage reads one WebSocket message into the reused buffer. The
// result is valid until the next call.
func (c *stompConn) readMessage(ctx context.Context) ([]byte, error) {
	typ, r, err := c.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	c.lastType = typ
	b := c.rbuf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	c.rbuf = b
	return b, nil
}

// subscribe subscribes to dest with id and waits until the server has
// taken the subscription, so that nothing published after it returns is
// missed. The SUBSCRIBE asks for a RECEIPT; some servers (go-stomp's)
// answer receipts on SUBSCRIBE with nothing, so an empty transaction
// (BEGIN with a receipt, then ABORT) follows in the same message as a
// fence: a server handles a session's frames in order, and whichever
// RECEIPT comes first proves the SUBSCRIBE was handled.
func (c *stompConn) subscribe(ctx context.Context, id, dest string) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	subReceipt, fence := "sub-"+id, "fence-"+id
	b := append(c.wbuf[:0], "SUBSCRIBE\n"...)
	b = stompframe.AppendHeader(b, "id", id, c.version)
	b = stompframe.AppendHeader(b, "destination", dest, c.version)
	b = stompframe.AppendHeader(b, "ack", "auto", c.version)
	b = stompframe.AppendHeader(b, "receipt", subReceipt, c.version)
	b = append(b, '\n', 0)
	b = append(b, "BEGIN\n"...)
	b = stompframe.AppendHeader(b, "transaction", fence, c.version)
	b = stompframe.AppendHeader(b, "receipt", fence, c.version)
	b = append(b, '\n', 0)
	b = append(b, "ABORT\n"...)
	b = stompframe.AppendHeader(b, "transaction", fence, c.version)
	b = append(b, '\n', 0)
	c.wbuf = b
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("SUBSCRIBE %s: %w", dest, err)
	}
	if _, err := c.await(ctx, stompframe.CommandReceipt, subReceipt, fence); err != nil {
		return fmt.Errorf("SUBSCRIBE %s: %w", dest, err)
	}
	return nil
}

// write sends b as one text message. ctx bounds it; the hot path passes
// context.Background(), which costs no timer, and relies on close to
// unblock.
func (c *stompConn) write(ctx context.Context, b []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// close ends the connection without the closing handshake: the run is
// over and nothing is waited for.
func (c *stompConn) close() { _ = c.ws.CloseNow() }
