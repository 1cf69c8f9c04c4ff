// Package client is loadtest's STOMP-over-WebSocket client: dialing from
// a chosen source address, CONNECT/CONNECTED, subscriptions confirmed by
// receipt, and reused buffers for the hot path.
package client

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
	// DialTimeout bounds the WebSocket handshake plus CONNECT/CONNECTED.
	DialTimeout = 10 * time.Second
	// WriteTimeout bounds one WebSocket write outside the hot path (a
	// SUBSCRIBE, a heart-beat); hot-path writes are unblocked by closing
	// the connection when the run ends.
	WriteTimeout = 5 * time.Second
	// ReadLimit bounds one inbound WebSocket message. A server may pack
	// many frames into one message (wsserver packs up to 32 KiB plus one
	// frame); 16 MiB leaves room for any server and still bounds memory.
	ReadLimit = 16 << 20
	// MaxBatchBytes bounds the SEND frames packed into one WebSocket
	// message: wsserver's read limit is its 64 KiB frame limit.
	MaxBatchBytes = 32 << 10
)

// Subprotocols are offered in the handshake, most preferred first.
var Subprotocols = stompframe.Subprotocols()

// Dialer opens STOMP sessions to one target.
type Dialer struct {
	// URL is the WebSocket URL, ws:// or wss://.
	URL string
	// Host is the CONNECT host header.
	Host string
	// Login goes in CONNECT; empty leaves it out.
	Login string
	// Passcode goes in CONNECT; empty leaves it out.
	Passcode string
	// Header is sent with the handshake; nil sends none. Attacks that
	// speak for several addresses set X-Forwarded-For here.
	Header http.Header
	// Compression is the permessage-deflate offer: CompressionDisabled
	// (the zero value) offers none; CompressionContextTakeover offers it
	// as browsers do, letting the server keep its window if it wants to.
	Compression websocket.CompressionMode
	// Protocol is what the sessions speak: STOMP (the zero value) or
	// Centrifugo's JSON protocol, which ignores Host, Login and Passcode
	// and connects anonymously.
	Protocol Protocol
	// KernelStamps, on Linux, has each session's reads keep the kernel
	// receive time (Conn.Stamps); elsewhere it does nothing. Off by
	// default.
	KernelStamps bool
}

// HTTPClientFrom returns an HTTP client whose connections leave from
// local, so the server sees that source address; nil when local is not
// valid (the system picks).
func HTTPClientFrom(local netip.Addr) *http.Client {
	if !local.IsValid() {
		return nil
	}
	d := &net.Dialer{
		LocalAddr: &net.TCPAddr{IP: local.AsSlice()},
		Timeout:   DialTimeout,
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:         stampingDial(d.DialContext),
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Second,
	}}
}

// Conn is one STOMP session over a WebSocket, with the buffers its
// hot paths reuse. Its read side belongs to one goroutine and its write
// side to one goroutine at a time.
type Conn struct {
	// WS is the WebSocket the session runs on.
	WS *websocket.Conn
	// Version is the STOMP version CONNECTED agreed.
	Version stompframe.Version
	// Decoder decodes inbound messages at Version.
	Decoder *stompframe.Decoder
	rbuf    []byte // last inbound message, reused
	// WriteBuf is the outbound message under construction, reused.
	WriteBuf []byte
	// LastType is the WebSocket type of the last inbound message.
	LastType websocket.MessageType
	// UserName is the CONNECTED frame's user-name header: the session's
	// principal.
	UserName string
	// Proto is the protocol the session speaks; Version, Decoder and
	// UserName are STOMP's.
	Proto Protocol
	// Stamps are the kernel receive times of the session's reads; nil
	// unless dialed with KernelStamps on a platform that gives them.
	Stamps *RecvStamps
}

// ErrorFrame is a STOMP ERROR frame received from the server.
type ErrorFrame struct {
	// Message is the frame's message header.
	Message string
	// RetryAfter is the frame's retry-after header (whole seconds), 0
	// when it has none: a server that refuses a CONNECT says when to
	// come back.
	RetryAfter time.Duration
}

func (e *ErrorFrame) Error() string { return "ERROR frame: " + e.Message }

// Dial opens a WebSocket (from local, when valid, through client) and
// exchanges CONNECT/CONNECTED, offering heartBeat ("cx,cy" in ms).
func (d *Dialer) Dial(ctx context.Context, client *http.Client, heartBeat string) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var slot *stampSlot
	if d.KernelStamps && kernelStampsSupported {
		ctx, slot = withStampSlot(ctx)
		if client == nil {
			client = defaultStampingClient
		}
	}
	if d.Protocol == Centrifugo {
		return d.dialCentrifugo(ctx, client, slot)
	}
	ws, resp, err := websocket.Dial(ctx, d.URL, &websocket.DialOptions{
		HTTPClient:      client,
		Subprotocols:    Subprotocols,
		HTTPHeader:      d.Header,
		CompressionMode: d.Compression,
	})
	if err != nil {
		if resp != nil {
			return nil, &HandshakeError{Status: resp.StatusCode,
				RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), err: err}
		}
		return nil, err
	}
	ws.SetReadLimit(ReadLimit)
	c := &Conn{WS: ws, Version: stompframe.V12, Decoder: stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: ReadLimit})}
	if slot != nil {
		c.Stamps = slot.stamps
	}
	f := stompframe.Frame{Command: stompframe.CommandConnect}
	f.Add("accept-version", "1.0,1.1,1.2")
	f.Add("host", d.Host)
	if d.Login != "" {
		f.Add("login", d.Login)
	}
	if d.Passcode != "" {
		f.Add("passcode", d.Passcode)
	}
	f.Add("heart-beat", heartBeat)
	c.WriteBuf = stompframe.Append(c.WriteBuf[:0], &f, stompframe.V12)
	if err := ws.Write(ctx, websocket.MessageText, c.WriteBuf); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("sending CONNECT: %w", err)
	}
	reply, err := c.Await(ctx, stompframe.CommandConnected, "")
	if err != nil {
		ws.CloseNow()
		return nil, err
	}
	switch reply {
	case "1.0":
		c.Version = stompframe.V10
	case "1.1":
		c.Version = stompframe.V11
	}
	c.Decoder.SetVersion(c.Version)
	return c, nil
}

// HandshakeError is a refused WebSocket handshake, with the HTTP status.
type HandshakeError struct {
	// Status is the HTTP status of the refusal.
	Status int
	// RetryAfter is the refusal's Retry-After, 0 when it had none.
	RetryAfter time.Duration
	err        error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("handshake refused with HTTP %d: %v", e.Status, e.err)
}

func (e *HandshakeError) Unwrap() error { return e.err }

// Await reads frames until one with command arrives (and, for RECEIPT,
// one whose receipt-id is any of ids); it returns the CONNECTED version
// header. An ERROR frame ends the wait with an *ErrorFrame. Other frames
// are skipped.
func (c *Conn) Await(ctx context.Context, command string, ids ...string) (string, error) {
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			return "", fmt.Errorf("waiting for %s: %w", command, err)
		}
		c.Decoder.Feed(msg)
		for {
			f, err := c.Decoder.Next()
			if err != nil {
				return "", fmt.Errorf("waiting for %s: %w", command, err)
			}
			if f == nil {
				break
			}
			switch {
			case f.Command == stompframe.CommandError:
				return "", &ErrorFrame{Message: f.Get("message"), RetryAfter: ParseRetryAfter(f.Get("retry-after"), time.Now())}
			case f.Command != command:
			case command == stompframe.CommandReceipt && !slices.Contains(ids, f.Get("receipt-id")):
			default:
				v := f.Get("version")
				if f.Command == stompframe.CommandConnected {
					c.UserName = f.Get("user-name")
				}
				// Drain the rest of the message so the Decoder lets go of it.
				for g, _ := c.Decoder.Next(); g != nil; g, _ = c.Decoder.Next() {
				}
				return v, nil
			}
		}
	}
}

// ReadMessage reads one WebSocket message into the reused buffer. The
// result is valid until the next call.
func (c *Conn) ReadMessage(ctx context.Context) ([]byte, error) {
	typ, r, err := c.WS.Reader(ctx)
	if err != nil {
		return nil, err
	}
	c.LastType = typ
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

// Subscribe subscribes to dest with id and waits until the server has
// taken the subscription, so that nothing published after it returns is
// missed. The SUBSCRIBE asks for a RECEIPT; some servers (go-stomp's)
// answer receipts on SUBSCRIBE with nothing, so an empty transaction
// (BEGIN with a receipt, then ABORT) follows in the same message as a
// fence: a server handles a session's frames in order, and whichever
// RECEIPT comes first proves the SUBSCRIBE was handled.
//
// On a Centrifugo session it subscribes to the channel dest and waits
// for the reply; id is not used.
func (c *Conn) Subscribe(ctx context.Context, id, dest string) error {
	if c.Proto == Centrifugo {
		return c.subscribeCentrifugo(ctx, dest)
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	subReceipt, fence := "sub-"+id, "fence-"+id
	b := append(c.WriteBuf[:0], "SUBSCRIBE\n"...)
	b = stompframe.AppendHeader(b, "id", id, c.Version)
	b = stompframe.AppendHeader(b, "destination", dest, c.Version)
	b = stompframe.AppendHeader(b, "ack", "auto", c.Version)
	b = stompframe.AppendHeader(b, "receipt", subReceipt, c.Version)
	b = append(b, '\n', 0)
	b = append(b, "BEGIN\n"...)
	b = stompframe.AppendHeader(b, "transaction", fence, c.Version)
	b = stompframe.AppendHeader(b, "receipt", fence, c.Version)
	b = append(b, '\n', 0)
	b = append(b, "ABORT\n"...)
	b = stompframe.AppendHeader(b, "transaction", fence, c.Version)
	b = append(b, '\n', 0)
	c.WriteBuf = b
	if err := c.WS.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("SUBSCRIBE %s: %w", dest, err)
	}
	if _, err := c.Await(ctx, stompframe.CommandReceipt, subReceipt, fence); err != nil {
		return fmt.Errorf("SUBSCRIBE %s: %w", dest, err)
	}
	return nil
}

// Write sends b as one text message. ctx bounds it; the hot path passes
// context.Background(), which costs no timer, and relies on close to
// unblock.
func (c *Conn) Write(ctx context.Context, b []byte) error {
	return c.WS.Write(ctx, websocket.MessageText, b)
}

// Close ends the connection without the closing handshake: the run is
// over and nothing is waited for.
func (c *Conn) Close() { _ = c.WS.CloseNow() }
