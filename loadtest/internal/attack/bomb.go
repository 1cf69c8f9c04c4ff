package attack

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// Deflate-bomb sizes, each with its reason.
const (
	// bombWireBytes is the least compressed size of one bomb: 50 KB, as
	// first seen against a STOMP-over-WebSocket broker, which inflated
	// it to gigabytes. Zeros at deflate's best ratio (about 1,030:1),
	// written a MiB at a time until the output reaches it, make 54 KB
	// that inflate to 56 MB.
	bombWireBytes = 50_000
	// defaultBombs is how many bombs the attack sends, one session
	// after another: enough that a bound that leaked a little per bomb
	// would show in the RSS.
	defaultBombs = 50
)

// Figures of the deflate-bomb attack.
const (
	figBombsSent     = "bombs_sent"
	figBombs1009     = "bombs_closed_1009"
	figBombInflated  = "bomb_inflated_bytes"
	figBombNoOffer   = "bombs_not_negotiated"
	figBombWireBytes = "bomb_wire_bytes"
)

// deflateBombAttack: sessions that negotiate permessage-deflate, each
// sending one compressed message of bombWireBytes that inflates to about
// 56 MB. The server must inflate at most its frame limit of it and close
// the session with 1009, its memory unmoved.
type deflateBombAttack struct {
	env      *attackEnv
	bomb     []byte // the compressed message, the sync flush's tail left off
	inflated int    // what it inflates to
}

func (a *deflateBombAttack) prepare(ctx context.Context) error {
	a.bomb, a.inflated = deflateBomb(bombWireBytes)
	return nil
}

// deflateBomb returns a permessage-deflate message of zeros of at least
// wire bytes and how many bytes it inflates to.
func deflateBomb(wire int) ([]byte, int) {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	n := 0
	for out.Len() < wire {
		_, _ = w.Write(zeros)
		n += len(zeros)
	}
	_ = w.Flush()
	b := out.Bytes()
	return bytes.TrimSuffix(b, []byte{0, 0, 0xff, 0xff}), n
}

func (a *deflateBombAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	rep := attackerReport{Closes: map[string]int{}, Figures: map[string]float64{
		figBombInflated: float64(a.inflated), figBombWireBytes: float64(len(a.bomb)),
	}}
	if !sleepUntil(ctx, start) {
		return rep
	}
	var noted int
	for i := 0; i < a.env.cfg.bombs && ctx.Err() == nil && time.Now().Before(end); i++ {
		code, err := a.one(ctx)
		switch {
		case errors.Is(err, errNotNegotiated):
			rep.Figures[figBombNoOffer]++
			rep.Notes = append(rep.Notes, err.Error())
			i = a.env.cfg.bombs // the server takes no compressed message at all
		case err != nil:
			if noted < 3 {
				rep.Notes = append(rep.Notes, err.Error())
				noted++
			}
		default:
			rep.Sessions++
			rep.Figures[figBombsSent]++
			rep.ClosedByServer++
			rep.Closes[fmt.Sprint(code)]++
			if code == 1009 {
				rep.Figures[figBombs1009]++
			}
		}
	}
	rep.Summary = fmt.Sprintf("%.0f bombs of %d bytes, each inflating to %.0f MB, sent one session after another; %.0f closed with 1009",
		rep.Figures[figBombsSent], len(a.bomb), float64(a.inflated)/1e6, rep.Figures[figBombs1009])
	return rep
}

// errNotNegotiated: the server answered the offer with no extension.
var errNotNegotiated = errors.New("deflate-bomb: the server did not negotiate permessage-deflate (start it with -compression)")

// one opens a session offering permessage-deflate, connects, sends the
// bomb and returns the close code the server answered it with.
func (a *deflateBombAttack) one(ctx context.Context) (int, error) {
	u, err := url.Parse(a.env.cfg.URL)
	if err != nil {
		return 0, err
	}
	nd := &net.Dialer{Timeout: client.DialTimeout}
	if src := a.env.nextSource(); src.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	nc, err := nd.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * client.DialTimeout))
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: " + strings.Join(client.Subprotocols, ", ") + "\r\n" +
		"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return 0, err
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return 0, fmt.Errorf("deflate-bomb: upgrade answered %s", resp.Status)
	}
	if !strings.HasPrefix(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		return 0, errNotNegotiated
	}
	if _, err := nc.Write(clientFrame(0x81, []byte("CONNECT\naccept-version:1.2\nhost:"+u.Hostname()+"\nheart-beat:0,0\n\n\x00"))); err != nil {
		return 0, err
	}
	if _, err := nc.Write(clientFrame(0x81|0x40, a.bomb)); err != nil {
		return 0, err
	}
	for {
		op, p, err := readServerFrame(br)
		if err != nil {
			return 0, fmt.Errorf("deflate-bomb: waiting for the close: %w", err)
		}
		if op == 0x8 {
			if len(p) < 2 {
				return 1005, nil
			}
			return int(binary.BigEndian.Uint16(p)), nil
		}
	}
}

// clientFrame is a masked client frame whose first byte is b0.
func clientFrame(b0 byte, p []byte) []byte {
	b := []byte{b0}
	switch {
	case len(p) < 126:
		b = append(b, 0x80|byte(len(p)))
	case len(p) <= 0xffff:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
	}
	key := [4]byte{0x5a, 0x13, 0x7e, 0x91}
	b = append(b, key[:]...)
	for i, c := range p {
		b = append(b, c^key[i&3])
	}
	return b
}

// maxServerFrame bounds what readServerFrame reads of one frame.
const maxServerFrame = 1 << 20

// readServerFrame reads one unmasked server frame: its opcode and
// payload.
func readServerFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	if n > maxServerFrame {
		return 0, nil, fmt.Errorf("a %d-byte frame", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	return h[0] & 0x0f, p, nil
}
