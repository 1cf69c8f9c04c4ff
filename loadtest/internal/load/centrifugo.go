package load

import (
	"context"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// newCentrifugoPublisher returns a publisher of Centrifugo publish
// commands to the channel dest, whose data is a JSON string of bodyLen
// bytes: the stamp and 'x's, which need no escaping.
func newCentrifugoPublisher(conn *client.Conn, cls *Class, idx uint32, dest string, bodyLen int) *Publisher {
	pad := make([]byte, bodyLen-StampLen)
	for i := range pad {
		pad[i] = 'x'
	}
	return &Publisher{conn: conn, Class: cls, idx: idx, prefix: client.CentrifugoPublishMiddle(dest), pad: pad,
		centrifugo: true, nextID: client.CentrifugoFirstPublishID}
}

// appendHead appends what precedes the stamp of the i-th frame of a
// message: a SEND's command and headers, or a publish command up to its
// data (after a newline between commands of one message).
func (p *Publisher) appendHead(b []byte, i int64) []byte {
	if !p.centrifugo {
		return append(b, p.prefix...)
	}
	if i > 0 {
		b = append(b, '\n')
	}
	b = append(b, client.CentrifugoPublishPrefix...)
	b = strconv.AppendUint(b, p.nextID, 10)
	p.nextID++
	return append(b, p.prefix...)
}

// appendTail ends a frame after its body.
func (p *Publisher) appendTail(b []byte) []byte {
	if !p.centrifugo {
		return append(b, 0)
	}
	return append(b, client.CentrifugoPublishSuffix...)
}

// extraLen is a frame's length beyond its prefix and body, at most.
func (p *Publisher) extraLen() int {
	if !p.centrifugo {
		return 1 // the NUL
	}
	return len("\n") + len(client.CentrifugoPublishPrefix) + 20 + len(client.CentrifugoPublishSuffix)
}

// readCentrifugo counts and times the publications of one message from
// a Centrifugo server and answers its pings; it reports false when the
// connection is to be given up.
func (s *Subscriber) readCentrifugo(msg []byte, now int64, readAt, kernel time.Time, kernelOK bool) bool {
	var n int64
	for rest := msg; rest != nil; {
		var l client.CentrifugoLine
		l, rest = client.NextCentrifugo(rest)
		switch l.Kind {
		case client.CentrifugoPublication:
			if s.StampedOnly {
				if _, _, ok := parseStamp(l.Data); !ok {
					s.Foreign.Add(1)
					continue
				}
			}
			n++
			s.observe(l.Data, now, readAt, kernel, kernelOK)
		case client.CentrifugoPing:
			ctx, cancel := context.WithTimeout(context.Background(), client.WriteTimeout)
			err := s.Conn.WS.Write(ctx, websocket.MessageText, client.CentrifugoPong)
			cancel()
			if err != nil {
				s.fail("pong: " + err.Error())
				s.Conn.Close()
				return false
			}
		case client.CentrifugoError:
			s.Class.Errors.Add(1)
			s.LastError = "error reply"
		case client.CentrifugoDisconnect:
			s.fail("disconnected by the server")
			s.Conn.Close()
			return false
		}
	}
	if n > 0 {
		s.Delivered.Add(n)
		s.Class.Delivered.Add(n)
		if s.Win != nil {
			s.Win.release(n)
		}
	}
	return true
}
