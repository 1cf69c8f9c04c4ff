package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
)

// Protocol is the protocol a session speaks over its WebSocket.
type Protocol uint8

const (
	// STOMP is STOMP 1.0–1.2 frames (the zero value): stompgate,
	// RabbitMQ Web-STOMP, any STOMP broker.
	STOMP Protocol = iota
	// Centrifugo is Centrifugo's JSON client protocol: one command or
	// reply per line of a text message; a connect, a subscribe to a
	// channel, publications to it, and pushes that carry what others
	// published. Channels are named namespace:name (room:12).
	Centrifugo
)

// ParseProtocol reads a protocol's name: stomp or centrifugo.
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "stomp":
		return STOMP, nil
	case "centrifugo":
		return Centrifugo, nil
	}
	return STOMP, fmt.Errorf("client: protocol %q: want stomp or centrifugo", s)
}

func (p Protocol) String() string {
	if p == Centrifugo {
		return "centrifugo"
	}
	return "stomp"
}

// Command ids of a Centrifugo session's set-up; publications take the
// ids after them.
const (
	centConnectID   = 1
	centSubscribeID = 2
	// CentrifugoFirstPublishID is the id of a session's first publish.
	CentrifugoFirstPublishID = 3
)

// AppendCentrifugoConnect appends the connect command of an anonymous
// client.
func AppendCentrifugoConnect(dst []byte) []byte {
	return append(dst, `{"id":`+strconv.Itoa(centConnectID)+`,"connect":{"name":"loadtest"}}`...)
}

// AppendCentrifugoSubscribe appends the subscribe command to channel.
func AppendCentrifugoSubscribe(dst []byte, channel string) []byte {
	dst = append(dst, `{"id":`+strconv.Itoa(centSubscribeID)+`,"subscribe":{"channel":`...)
	dst = strconv.AppendQuote(dst, channel)
	return append(dst, "}}"...)
}

// CentrifugoPublishPrefix is what precedes a publish command's id.
const CentrifugoPublishPrefix = `{"id":`

// CentrifugoPublishMiddle is what follows a publish command's id, up to
// the opening quote of its data, a JSON string: the data is the body,
// which must need no escaping (loadtest's stamps and 'x' padding).
func CentrifugoPublishMiddle(channel string) []byte {
	b := append([]byte(nil), `,"publish":{"channel":`...)
	b = strconv.AppendQuote(b, channel)
	return append(b, `,"data":"`...)
}

// CentrifugoPublishSuffix closes a publish command after its data.
const CentrifugoPublishSuffix = `"}}`

// CentrifugoLineKind is what one line from a Centrifugo server is.
type CentrifugoLineKind uint8

const (
	// CentrifugoOther is a reply that needs nothing (a publish's).
	CentrifugoOther CentrifugoLineKind = iota
	// CentrifugoPing is the server's ping, an empty object, which a
	// client that was told pong:true answers with an empty object.
	CentrifugoPing
	// CentrifugoPublication is a push of a publication: Data is its data.
	CentrifugoPublication
	// CentrifugoError is a reply with an error.
	CentrifugoError
	// CentrifugoDisconnect is a push that ends the connection.
	CentrifugoDisconnect
)

// CentrifugoLine is one line of a message from a Centrifugo server.
type CentrifugoLine struct {
	Kind CentrifugoLineKind
	// Data is the publication's data for CentrifugoPublication: the
	// bytes of the JSON value, and of a string its contents without the
	// quotes (escapes left as they are).
	Data []byte
}

// NextCentrifugo returns the first line of msg, classified, and the rest
// (nil at the end). It allocates nothing: a load generator reads every
// push with it, so it finds the fields it needs rather than decoding the
// JSON; lines it cannot place are CentrifugoOther.
func NextCentrifugo(msg []byte) (CentrifugoLine, []byte) {
	line, rest, _ := bytes.Cut(msg, []byte{'\n'})
	if len(rest) == 0 {
		rest = nil
	}
	line = bytes.TrimSpace(line)
	switch {
	case len(line) == 2 && line[0] == '{' && line[1] == '}':
		return CentrifugoLine{Kind: CentrifugoPing}, rest
	case bytes.HasPrefix(line, []byte(`{"push":`)):
		if bytes.Contains(line, []byte(`"disconnect":`)) {
			return CentrifugoLine{Kind: CentrifugoDisconnect}, rest
		}
		i := bytes.Index(line, []byte(`"pub":`))
		if i < 0 {
			return CentrifugoLine{}, rest
		}
		j := bytes.Index(line[i:], []byte(`"data":`))
		if j < 0 {
			return CentrifugoLine{}, rest
		}
		data := line[i+j+len(`"data":`):]
		if len(data) > 0 && data[0] == '"' {
			end := bytes.IndexByte(data[1:], '"')
			if end < 0 {
				return CentrifugoLine{}, rest
			}
			return CentrifugoLine{Kind: CentrifugoPublication, Data: data[1 : 1+end]}, rest
		}
		return CentrifugoLine{Kind: CentrifugoPublication, Data: data}, rest
	case bytes.Contains(line, []byte(`"error":{`)):
		return CentrifugoLine{Kind: CentrifugoError}, rest
	}
	return CentrifugoLine{}, rest
}

// CentrifugoPong is a client's answer to a ping.
var CentrifugoPong = []byte("{}")

// centReply is a Centrifugo reply as the set-up reads it.
type centReply struct {
	ID    uint32 `json:"id"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// dialCentrifugo opens a WebSocket to a Centrifugo server and connects
// as an anonymous client.
func (d *Dialer) dialCentrifugo(ctx context.Context, client *http.Client, slot *stampSlot) (*Conn, error) {
	ws, resp, err := websocket.Dial(ctx, d.URL, &websocket.DialOptions{
		HTTPClient:      client,
		HTTPHeader:      d.Header,
		CompressionMode: d.Compression,
	})
	if err != nil {
		if resp != nil {
			return nil, &HandshakeError{Status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	ws.SetReadLimit(ReadLimit)
	c := &Conn{WS: ws, Proto: Centrifugo}
	if slot != nil {
		c.Stamps = slot.stamps
	}
	c.WriteBuf = AppendCentrifugoConnect(c.WriteBuf[:0])
	if err := ws.Write(ctx, websocket.MessageText, c.WriteBuf); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("sending connect: %w", err)
	}
	if err := c.awaitCentrifugo(ctx, centConnectID); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// awaitCentrifugo reads until the reply with id arrives, answering
// pings; a reply with an error ends the wait with it.
func (c *Conn) awaitCentrifugo(ctx context.Context, id uint32) error {
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			return err
		}
		for rest := msg; rest != nil; {
			var line []byte
			line, rest, _ = bytes.Cut(rest, []byte{'\n'})
			if len(rest) == 0 {
				rest = nil
			}
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			if string(line) == "{}" {
				if err := c.WS.Write(ctx, websocket.MessageText, CentrifugoPong); err != nil {
					return err
				}
				continue
			}
			var r centReply
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("reading a reply: %w", err)
			}
			if r.ID != id {
				continue
			}
			if r.Error != nil {
				return fmt.Errorf("error %d: %s", r.Error.Code, r.Error.Message)
			}
			return nil
		}
	}
}

// subscribeCentrifugo subscribes to channel and waits for the reply.
func (c *Conn) subscribeCentrifugo(ctx context.Context, channel string) error {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c.WriteBuf = AppendCentrifugoSubscribe(c.WriteBuf[:0], channel)
	if err := c.WS.Write(ctx, websocket.MessageText, c.WriteBuf); err != nil {
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	if err := c.awaitCentrifugo(ctx, centSubscribeID); err != nil {
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	return nil
}
