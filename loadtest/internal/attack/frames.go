package attack

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/stompframe"
)

// The attacks in this file abuse the server through STOMP frames on
// sessions it accepted: replies it must make, frames it must hold, bytes
// it relays, work it does per frame.

// Figure names of attackerReport.Figures.
const (
	figOpsPerSec       = "pairs_written_per_sec"
	figBytesHeld       = "bytes_in_transactions"
	figSessionsHeld    = "sessions_held"
	figSessionsPeak    = "sessions_held_peak"
	figDeliveredEnd    = "delivered_per_sec_at_end"
	figDeliveredAvg    = "delivered_per_sec_avg"
	figOpenAtEnd       = "open_at_end"
	figTextMessages    = "text_messages"
	figBinaryMessages  = "binary_messages"
	figSubscriptions   = "subscriptions_held"
	figCommitted       = "frames_committed"
	figHandshakeTrials = "handshake_attempts"
)

// attackBody is the body of the attack's messages: it starts with 'A',
// never with a stamp, so honest subscribers count it apart.
func attackBody(n int) []byte { return bytes.Repeat([]byte{'A'}, n) }

// appendSend appends a SEND frame to dest, in transaction tx when tx is
// not empty.
func appendSend(b []byte, dest, tx string, body []byte) []byte {
	b = append(b, "SEND\n"...)
	b = stompframe.AppendHeader(b, "destination", dest, stompframe.V12)
	if tx != "" {
		b = stompframe.AppendHeader(b, "transaction", tx, stompframe.V12)
	}
	b = stompframe.AppendContentLength(b, len(body))
	b = append(b, '\n')
	b = append(b, body...)
	return append(b, 0)
}

// appendTx appends a BEGIN, COMMIT or ABORT of tx.
func appendTx(b []byte, command, tx string) []byte {
	b = append(b, command+"\n"...)
	b = stompframe.AppendHeader(b, "transaction", tx, stompframe.V12)
	return append(b, '\n', 0)
}

// repeatFrames packs copies of frame into one message of at most size
// bytes (at least one copy) and returns it with the count.
func repeatFrames(frame []byte, size int) ([]byte, int64) {
	n := max(size/len(frame), 1)
	return bytes.Repeat(frame, n), int64(n)
}

// receiptsAttack: one session sends frames that each ask for a RECEIPT,
// packed into large messages, and never reads the receipts.
type receiptsAttack struct {
	env *attackEnv
	atk *attackers
	s   *attackSession
}

func (a *receiptsAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	var err error
	a.s, err = a.atk.open(ctx, a.env.nextSource(), "0,0", false)
	return err
}

func (a *receiptsAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	msg, per := repeatFrames([]byte("UNSUBSCRIBE\nid:nope\nreceipt:r\n\n\x00"), a.env.cfg.receiptsMessage)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !sleepUntil(ctx, start) {
			return
		}
		for ctx.Err() == nil && time.Now().Before(end) {
			if a.atk.write(a.s, websocket.MessageText, msg, per) != nil {
				return
			}
		}
	}()
	sleepUntil(ctx, end)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll() // unblocks a write the server stopped reading
	wg.Wait()
	rep.Summary = fmt.Sprintf("one session wrote %d receipt-bearing frames to its socket (client-side count, not what the server read) in messages of %d bytes (%d frames each) and read nothing",
		rep.FramesWritten, len(msg), per)
	return rep
}

// commitBurstAttack: sessions each stay under the send limit, but inside
// transactions, and then commit together: everything they sent arrives in
// the room at once.
type commitBurstAttack struct {
	env      *attackEnv
	atk      *attackers
	sessions []*attackSession
}

func (a *commitBurstAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	var err error
	a.sessions, err = a.atk.openMany(ctx, a.env.cfg.commitSessions, "0,0", true)
	if err != nil {
		a.atk.closeAll()
		return err
	}
	for i, s := range a.sessions {
		if err := a.atk.write(s, websocket.MessageText, appendTx(nil, "BEGIN", "burst-"+strconv.Itoa(i)), 1); err != nil {
			a.atk.closeAll()
			return fmt.Errorf("BEGIN: %w", err)
		}
	}
	return nil
}

func (a *commitBurstAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	rate := float64(cfg.sendLimit - 1)
	commitAt := start.Add(cfg.commitAfter)
	body := attackBody(cfg.commitBody)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var committed int64
	for i, s := range a.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx := "burst-" + strconv.Itoa(i)
			var sent int64
			paceUntil(ctx, start, commitAt, rate, func(n int64) error {
				var b []byte
				for range n {
					b = appendSend(b, a.env.room, tx, body)
				}
				if err := a.atk.write(s, websocket.MessageText, b, n); err != nil {
					return err
				}
				sent += n
				return nil
			})
			if !sleepUntil(ctx, commitAt) {
				return
			}
			if a.atk.write(s, websocket.MessageText, appendTx(nil, "COMMIT", tx), 1) == nil {
				mu.Lock()
				committed += sent
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sleepUntil(ctx, end)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Figures = map[string]float64{figCommitted: float64(committed)}
	rep.Summary = fmt.Sprintf("%d sessions sent %g SEND/s each inside transactions for %v (%d-byte bodies), then committed %d frames together into the honest room",
		len(a.sessions), rate, cfg.commitAfter, cfg.commitBody, committed)
	return rep
}

// txFillAttack: sessions open transactions and fill them with large
// bodies at the send limit, never committing: the server holds it all.
type txFillAttack struct {
	env      *attackEnv
	atk      *attackers
	sessions []*attackSession
}

func (a *txFillAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	var err error
	a.sessions, err = a.atk.openMany(ctx, a.env.cfg.txSessions, "0,0", true)
	if err != nil {
		a.atk.closeAll()
		return err
	}
	for i, s := range a.sessions {
		if err := a.atk.write(s, websocket.MessageText, appendTx(nil, "BEGIN", "fill-"+strconv.Itoa(i)), 1); err != nil {
			a.atk.closeAll()
			return fmt.Errorf("BEGIN: %w", err)
		}
	}
	return nil
}

func (a *txFillAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	body := attackBody(cfg.txBody)
	dest := a.env.dest("tx-fill")
	var wg sync.WaitGroup
	for i, s := range a.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			frame := appendSend(nil, dest, "fill-"+strconv.Itoa(i), body)
			paceUntil(ctx, start, end, float64(cfg.sendLimit), func(n int64) error {
				// One frame per message: a body near the frame limit
				// leaves no room for a second.
				for range n {
					if err := a.atk.write(s, websocket.MessageText, frame, 1); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	sends := rep.FramesWritten - int64(len(a.sessions)) // less the BEGINs
	rep.Figures = map[string]float64{figBytesHeld: float64(max(sends, 0) * int64(len(body)))}
	rep.Summary = fmt.Sprintf("%d sessions wrote %d SENDs of %d bytes (%.1f MiB) into transactions never committed, %d SEND/s each",
		len(a.sessions), max(sends, 0), len(body), scenario.MiB(max(sends, 0)*int64(len(body))), cfg.sendLimit)
	return rep
}

// utf8Attack: one session sends SEND frames whose header value is not
// UTF-8, alternately in text and binary WebSocket messages, into the
// honest room. A browser fails a socket on a text message that is not
// UTF-8.
type utf8Attack struct {
	env *attackEnv
	atk *attackers
	// s sends its frames in text messages, s[1] in binary ones: a server
	// that closes the session on the first bad frame still meets both.
	s [2]*attackSession
}

// utf8Interval separates the attack's frames: one bad frame is all it
// takes; a couple a second stays far under any send limit.
const utf8Interval = 500 * time.Millisecond

func (a *utf8Attack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	for i := range a.s {
		var err error
		if a.s[i], err = a.atk.open(ctx, a.env.nextSource(), "0,0", true); err != nil {
			a.atk.closeAll()
			return err
		}
	}
	return nil
}

func (a *utf8Attack) run(ctx context.Context, start, end time.Time) attackerReport {
	// The header value is Latin-1 "café" with a lone continuation byte:
	// not UTF-8 in any reading.
	var frame []byte
	frame = append(frame, "SEND\n"...)
	frame = stompframe.AppendHeader(frame, "destination", a.env.room, stompframe.V12)
	frame = append(frame, "x-name:caf\xe9\x80\n"...)
	body := attackBody(8)
	frame = stompframe.AppendContentLength(frame, len(body))
	frame = append(frame, '\n')
	frame = append(frame, body...)
	frame = append(frame, 0)
	var text, binary int64
	var closed [2]bool
	for k := 0; !closed[0] || !closed[1]; k++ {
		if !sleepUntil(ctx, start.Add(time.Duration(k)*utf8Interval)) || !time.Now().Before(end) {
			break
		}
		v := k % 2
		if closed[v] {
			continue
		}
		typ := websocket.MessageText
		if v == 1 {
			typ = websocket.MessageBinary
		}
		if a.atk.write(a.s[v], typ, frame, 1) != nil {
			closed[v] = true
			continue
		}
		if typ == websocket.MessageText {
			text++
		} else {
			binary++
		}
	}
	sleepUntil(ctx, end)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Figures = map[string]float64{figTextMessages: float64(text), figBinaryMessages: float64(binary)}
	rep.Summary = fmt.Sprintf("two sessions sent %d SENDs with a header value that is not UTF-8 into the honest room (%d in text messages, %d in binary)",
		text+binary, text, binary)
	return rep
}

// subChurnAttack: one session subscribes and unsubscribes as fast as it
// can on a topic that many subscriptions already hold.
type subChurnAttack struct {
	env     *attackEnv
	atk     *attackers
	churner *attackSession
	held    int
}

// churnPerSession is the subscriptions each holding session takes: under
// wsserver's default -max-subscriptions (100), and with the fence's two
// frames under its default control-frame budget (100 per 10 s), so that
// setting the room up is not itself an attack.
const churnPerSession = 90

func (a *subChurnAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	dest := a.env.dest("churn")
	total := a.env.cfg.churnSubs
	holders := (total + churnPerSession - 1) / churnPerSession
	sessions, err := a.atk.openMany(ctx, holders, "0,0", false)
	if err != nil {
		a.atk.closeAll()
		return err
	}
	err = scenario.Parallel(ctx, holders, scenario.DialConcurrency, func(i int) error {
		s := sessions[i]
		n := min(churnPerSession, total-i*churnPerSession)
		var b []byte
		for k := range n {
			b = append(b, "SUBSCRIBE\n"...)
			b = stompframe.AppendHeader(b, "id", "h"+strconv.Itoa(k), stompframe.V12)
			b = stompframe.AppendHeader(b, "destination", dest, stompframe.V12)
			b = append(b, '\n', 0)
		}
		// A fence: its RECEIPT proves every SUBSCRIBE before it was
		// handled (see stompConn.subscribe).
		fence := "held-" + strconv.Itoa(i)
		b = append(b, "BEGIN\n"...)
		b = stompframe.AppendHeader(b, "transaction", fence, stompframe.V12)
		b = stompframe.AppendHeader(b, "receipt", fence, stompframe.V12)
		b = append(b, '\n', 0)
		b = appendTx(b, "ABORT", fence)
		wctx, cancel := context.WithTimeout(ctx, client.DialTimeout)
		defer cancel()
		if err := s.conn.Write(wctx, b); err != nil {
			return fmt.Errorf("SUBSCRIBE: %w", err)
		}
		if _, err := s.conn.Await(wctx, stompframe.CommandReceipt, fence); err != nil {
			return fmt.Errorf("SUBSCRIBE: %w", err)
		}
		a.atk.startSink(s)
		return nil
	})
	if err != nil {
		a.atk.closeAll()
		return err
	}
	a.held = total
	a.churner, err = a.atk.open(ctx, a.env.nextSource(), "0,0", true)
	if err != nil {
		a.atk.closeAll()
	}
	return err
}

func (a *subChurnAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	dest := a.env.dest("churn")
	var pair []byte
	pair = append(pair, "SUBSCRIBE\n"...)
	pair = stompframe.AppendHeader(pair, "id", "churn", stompframe.V12)
	pair = stompframe.AppendHeader(pair, "destination", dest, stompframe.V12)
	pair = append(pair, '\n', 0)
	pair = append(pair, "UNSUBSCRIBE\nid:churn\n\n\x00"...)
	msg, pairs := repeatFrames(pair, client.MaxBatchBytes)
	var ops int64
	began := time.Now()
	if sleepUntil(ctx, start) {
		began = time.Now()
		for ctx.Err() == nil && time.Now().Before(end) {
			if a.atk.write(a.churner, websocket.MessageText, msg, 2*pairs) != nil {
				break
			}
			ops += pairs
		}
	}
	took := time.Since(began)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rate := perSecond(ops, took)
	rep.Figures = map[string]float64{figOpsPerSec: rate, figSubscriptions: float64(a.held)}
	rep.Summary = fmt.Sprintf("one session wrote %d SUBSCRIBE+UNSUBSCRIBE pairs to its socket (client-side count, %.0f per second; not what the server processed) on a topic holding %d subscriptions",
		ops, rate, a.held)
	return rep
}
