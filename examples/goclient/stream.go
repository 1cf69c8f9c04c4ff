package main

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// maxMessageBytes is the largest WebSocket message the client reads. The
// server packs several frames into one message until it holds 32 KiB,
// and one frame may be as large as its -max-frame-size (64 KiB by
// default); 1 MiB leaves room for a server configured larger, and stops
// a wrong server from making the client hold more.
const maxMessageBytes = 1 << 20

// writeTimeout bounds one write: a server that stops reading must not
// hold the client for ever.
const writeTimeout = 10 * time.Second

// wsStream is a WebSocket seen as the byte stream STOMP is: what go-stomp
// writes goes out as messages, and the messages that come in are read
// one after the other as one stream, whatever their type.
//
// websocket.NetConn is not enough here: it reads only the one message
// type it is given and closes the connection on the other. The server
// sends frames whose body is not UTF-8 in binary messages (a text
// message must be UTF-8, and browsers drop the socket otherwise) and the
// rest in text messages, so a STOMP client must take both.
type wsStream struct {
	ws *websocket.Conn
	// ctx bounds every read and write; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// r is the message being read, nil between messages. Only the
	// reading goroutine (go-stomp's reader) touches it.
	r io.Reader
}

// newStream wraps ws, with its read limit raised to maxMessageBytes.
func newStream(ws *websocket.Conn) *wsStream {
	ws.SetReadLimit(maxMessageBytes)
	ctx, cancel := context.WithCancel(context.Background())
	return &wsStream{ws: ws, ctx: ctx, cancel: cancel}
}

// Read reads from the current message, and from the next one, of either
// type, when it is done.
func (s *wsStream) Read(p []byte) (int, error) {
	for {
		if s.r == nil {
			_, r, err := s.ws.Reader(s.ctx)
			if err != nil {
				return 0, err
			}
			s.r = r
		}
		n, err := s.r.Read(p)
		if err == io.EOF {
			s.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// Write sends p as one message: text when it is UTF-8, binary when not
// (a SEND with a binary body), as the server does. The server reads
// frames from either.
func (s *wsStream) Write(p []byte) (int, error) {
	typ := websocket.MessageText
	if !utf8.Valid(p) {
		typ = websocket.MessageBinary
	}
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	if err := s.ws.Write(ctx, typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the WebSocket with 1000 (normal closure). After a
// DISCONNECT's RECEIPT the server closes the connection too, and may do
// so first: a connection already closed, or closed normally by the
// server, is no failure.
func (s *wsStream) Close() error {
	err := s.ws.Close(websocket.StatusNormalClosure, "")
	s.cancel()
	if errors.Is(err, net.ErrClosed) || websocket.CloseStatus(err) == websocket.StatusNormalClosure {
		return nil
	}
	return err
}
