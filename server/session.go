package server

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// session is one STOMP session on one WebSocket connection.
//
// Goroutines: the HTTP handler goroutine that accepted the connection is
// the session's reader and owner (serve). What is queued for a session is
// written by the reader of the session whose frames queued it, before
// that reader waits (see broker.Batch and Flush), or by a writer
// goroutine that exists only while the outbound queue is non-empty and
// the socket is slow; an idle session has one goroutine. Heart-beats and
// deadlines use runtime timers, not goroutines.
type session struct {
	srv  *Server
	conn *wsconn.Conn
	st   interceptor.Session

	// Owned by the reader goroutine. The small fields sit together so
	// that the struct packs tight: an idle session is mostly this struct.
	version    stompframe.Version // written by the reader under mu; read by others under mu
	maxVersion stompframe.Version // from the negotiated subprotocol
	connected  atomic.Bool
	dec        *stompframe.Decoder
	subs       map[string]*broker.Subscription
	slots      map[string]func() // by subscription id: what gives back its SubscriberSlots place
	txs        map[string]*transaction
	presence   *sessionPresence          // memberships and watches (presence.go); nil until the first
	txBytes    int                       // bytes held by all open transactions
	control    *sessionlimit.FixedWindow // control-frame budget; nil until the first
	in         inboundBudget             // frames and bytes per window (inbound.go)
	heartBeats uint64                    // dec.HeartBeats() already charged to in

	opened    int64        // Unix nanoseconds of the WebSocket upgrade
	lastRead  atomic.Int64 // Unix nanoseconds of the last WebSocket message read
	lastWrite atomic.Int64 // Unix nanoseconds of the last WebSocket write
	paused    atomic.Int64 // Unix nanoseconds the reader last paused for the inbound budget
	resumed   atomic.Int64 // Unix nanoseconds it last resumed from such a pause

	// box is the outbound side: the queue, its bounds, the writer and the
	// session's end (closed, with the close reason). Its lock comes after
	// mu (see outbox).
	box outbox

	// mu guards the version above and the fields below: the problem
	// behind the end, and the timers.
	mu       sync.Mutex
	kind     string // the kind of problem behind the close reason, for the log; may be empty
	hbIn     *time.Timer
	hbOut    *time.Timer
	inEvery  time.Duration // negotiated incoming heart-beat; 0 none
	outEvery time.Duration // negotiated outgoing heart-beat; 0 none

	expiry  *time.Timer // ends the session when its credentials expire
	expires int64       // Unix nanoseconds expiry is armed for; written by the reader under mu

	ping *pinger // WebSocket pings when the client sends no heart-beats; nil until armed

	// onEnd is what OnSessionEnd attached to the upgrade request; run
	// once, after the session has ended.
	onEnd []func()

	// batch holds back the writers this reader's SENDs started until it
	// waits for input (see broker.Batch); batched counts the frames
	// handled since it took the first. Owned by the reader.
	batch   broker.Batch
	batched int
}

// maxBatchedFrames is the most frames a reader handles while its batch
// holds writers back: a client that never lets its socket run dry does
// not hold back other sessions' deliveries for longer than that.
const maxBatchedFrames = 32

// flushBatch starts the writers the reader's batch holds back.
func (s *session) flushBatch() {
	s.batch.Flush()
	s.batched = 0
}

func newSession(srv *Server, conn *wsconn.Conn, ip netip.Addr, q url.Values) *session {
	s := &session{
		srv:        srv,
		conn:       conn,
		dec:        stompframe.NewDecoder(srv.cfg.Limits),
		version:    stompframe.V12,
		maxVersion: stompframe.V12,
	}
	s.box.init(&srv.cfg, &srv.out)
	s.st.ID = newSessionID()
	s.st.RemoteIP = ip
	if len(q) > 0 {
		s.st.Query = q
	}
	now := time.Now().UnixNano()
	s.opened = now
	s.lastRead.Store(now)
	s.lastWrite.Store(now)
	return s
}

// serve runs the session on the calling goroutine until it ends.
func (s *session) serve() {
	s.conn.SetBeforeWait(s.flushBatch)
	s.conn.SetFrameHook(s.chargeFrame)
	s.mu.Lock()
	s.hbIn = time.AfterFunc(s.srv.cfg.ConnectTimeout, s.connectTimeout)
	s.mu.Unlock()

	reason := s.readLoop()

	s.mu.Lock()
	s.box.end(reason)
	reason = s.box.closeReason()
	if s.hbIn != nil {
		s.hbIn.Stop()
	}
	if s.hbOut != nil {
		s.hbOut.Stop()
	}
	if s.expiry != nil {
		s.expiry.Stop()
	}
	s.mu.Unlock()

	// The writer finishes what is queued (ERROR, RECEIPT, the close) or
	// fails fast on a dead connection.
	s.box.writers.Wait()
	_ = s.conn.CloseNow()

	for id, sub := range s.subs {
		s.unsubscribe(id, sub)
	}
	s.endPresence() // presence watches: presence.go
	s.discardTransactions()
	s.srv.reg.remove(s)
	s.srv.cfg.Chain.SessionClosed(&s.st)
	runAll(s.onEnd)
	s.srv.cfg.Observer.SessionClosed(reason)
	s.logEnd(reason)
}

// logEnd writes the one line an operator reads about a session that
// ended: who, from where, for how long, what it sent, and why it ended,
// with the kind of problem when there was one (frame_too_large,
// permission, ...).
func (s *session) logEnd(reason *outcome.Close) {
	principal := ""
	if p := s.st.Principal; p != nil {
		principal = p.Name
	}
	s.mu.Lock()
	kind := s.kind
	s.mu.Unlock()
	c := s.st.Counts()
	s.srv.cfg.Logger.Info("session closed",
		"session", s.st.ID,
		"principal", principal,
		"ip", s.st.RemoteIP.String(),
		"duration", time.Duration(time.Now().UnixNano()-s.opened).Round(time.Millisecond),
		"received", c.Received, "passed", c.Passed, "dropped", c.Dropped,
		"reason", reason.String(),
		"detail", kind)
}

// readLoop reads WebSocket messages until the session ends and returns the
// close reason as the reader saw it. It stops the session's pings as it
// returns: they need a reader to take in their pongs.
func (s *session) readLoop() (reason *outcome.Close) {
	defer s.stopPings()
	defer s.flushBatch()
	defer func() {
		if v := recover(); v != nil {
			s.srv.cfg.Observer.Panic()
			s.srv.cfg.Logger.Error("panic in session", "session", s.st.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.fail(ending{reason: outcome.ClosePanic, detail: "the server failed while handling a frame"})
			s.drain()
			reason = outcome.ClosePanic
		}
	}()
	for {
		_, msg, err := s.conn.ReadMessage()
		if err != nil {
			var pe *wsconn.ProtocolError
			switch {
			case errors.Is(err, wsconn.ErrMessageTooBig):
				s.fail(ending{reason: outcome.CloseProtocolError, kind: outcome.KindFrameTooLarge, code: wsconn.StatusMessageTooBig, message: "frame too large",
					detail: fmt.Sprintf("a WebSocket message exceeded the %d-byte frame limit", s.srv.cfg.Limits.MaxFrameSize)})
			case errors.Is(err, wsconn.ErrInvalidUTF8):
				// RFC 6455 section 8.1: a text message that is not UTF-8
				// fails the connection with 1007, at its first invalid
				// byte. Binary messages may carry any body; their headers
				// are checked by the decoder.
				s.fail(ending{reason: outcome.CloseProtocolError, kind: outcome.KindInvalidUTF8, code: wsconn.StatusInvalidFramePayloadData, message: "invalid UTF-8",
					detail: "a text WebSocket message was not valid UTF-8 (RFC 6455 section 8.1); send binary bodies in binary messages"})
			case errors.As(err, &pe):
				s.failWebSocket(pe)
			default:
				return outcome.CloseClientGone
			}
			s.drain()
			return nil
		}
		now := s.conn.ReadTime()
		s.lastRead.Store(now.UnixNano())
		// The decoder copies what it keeps of msg before it asks for
		// more, so msg may go back to the connection after this.
		s.dec.Feed(msg)
		if s.decodeAll(now) {
			s.drain()
			return nil
		}
	}
}

// decodeAll handles every complete frame fed so far. It reports whether
// the session is ending.
func (s *session) decodeAll(now time.Time) bool {
	for {
		f, err := s.dec.Next()
		if err != nil {
			pe, ok := stompframe.AsProtocolError(err)
			if !ok {
				pe = &stompframe.ProtocolError{Message: "malformed frame", Detail: err.Error()}
			}
			s.fail(ending{reason: outcome.CloseProtocolError, kind: protocolErrorKind(pe), message: pe.Message, detail: pe.Detail})
			return true
		}
		// Every STOMP frame and heart-beat EOL is charged as well as the
		// WebSocket frames that brought them: one message may pack
		// thousands.
		n := 0
		if f != nil {
			n = 1
		}
		if hb := s.dec.HeartBeats(); hb != s.heartBeats {
			n += int(hb - s.heartBeats)
			s.heartBeats = hb
		}
		if n > 0 && s.charge(now, n, 0) {
			return true
		}
		if f == nil {
			return false
		}
		if s.batch.Len() > 0 && !batchable(f) {
			s.flushBatch()
		}
		if s.handleTraced(f, now) {
			return true
		}
		if s.batch.Len() > 0 {
			if s.batched++; s.batched >= maxBatchedFrames {
				s.flushBatch()
			}
		}
	}
}

// batchable reports whether f may be handled while the reader's batch
// holds writers back: a SEND that brings no new credentials, whose
// handling cannot wait on anything. Anything else (a CONNECT checked
// against Redis, a token checked against a key set that may need a
// fetch) flushes the batch first.
func batchable(f *stompframe.Frame) bool {
	if f.Command != stompframe.CommandSend {
		return false
	}
	_, token := f.Lookup("token")
	return !token
}

// drain keeps reading (and discarding) until the writer has closed the
// connection, so the close handshake's reply is consumed and a client
// that keeps sending does not block on a full socket.
func (s *session) drain() {
	// What the writer is to send (an ERROR, the close) must not wait for
	// this client to stop sending.
	s.flushBatch()
	// What is read now is discarded: it costs no budget, and the reader
	// must not pause while the close waits for it.
	s.conn.SetFrameHook(nil)
	_ = s.conn.SetReadDeadline(time.Now().Add(s.srv.cfg.WriteTimeout + wsconn.CloseTimeout))
	for {
		if _, _, err := s.conn.ReadMessage(); err != nil {
			return
		}
	}
}

// failWebSocket ends the session for a WebSocket frame that breaks RFC
// 6455: the close carries the RFC's code, and no ERROR frame goes out, as
// the peer's framing cannot be trusted to carry it.
func (s *session) failWebSocket(pe *wsconn.ProtocolError) {
	s.mu.Lock()
	s.box.mu.Lock()
	first := s.box.endLocked(outcome.CloseProtocolError)
	var p pushed
	if first {
		s.kind = outcome.KindWebSocket
		p = s.box.pushLocked(outItem{close: true, code: pe.Code, reason: pe.Text}, 0)
	}
	s.box.mu.Unlock()
	s.mu.Unlock()
	s.startWriter(p, nil)
	if first {
		s.srv.cfg.Observer.ProtocolErrorClose(outcome.KindWebSocket)
	}
}

func protocolErrorKind(pe *stompframe.ProtocolError) string {
	switch {
	case errors.Is(pe, stompframe.ErrInvalidUTF8):
		return outcome.KindInvalidUTF8
	case errors.Is(pe, stompframe.ErrFrameTooLarge):
		return outcome.KindFrameTooLarge
	case errors.Is(pe, stompframe.ErrBadEscape):
		return outcome.KindBadEscape
	case errors.Is(pe, stompframe.ErrTooManyHeaders), errors.Is(pe, stompframe.ErrHeaderLineTooLong):
		return outcome.KindHeaderTooLarge
	}
	return outcome.KindMalformed
}

// shutdown ends the session for a server shutdown: queued frames are
// flushed, then an ERROR frame and a close with 1001. The ERROR's
// retry-after is drawn over [1, window] seconds.
func (s *session) shutdown(window int64) {
	s.fail(ending{reason: outcome.CloseShutdown, detail: "the server is shutting down; reconnect to another instance",
		headers: retryAfterHeaders(window)})
}

// abort ends the session at once: the queue is discarded and the
// connection closed without a close handshake.
func (s *session) abort(reason *outcome.Close) {
	s.box.abort(reason)
	// Every read and write on the connection fails at once.
	_ = s.conn.CloseNow()
}

func (s *session) connectTimeout() {
	if s.connected.Load() {
		return
	}
	s.fail(ending{reason: outcome.CloseConnectTimeout,
		detail: fmt.Sprintf("no CONNECT frame within %v of the WebSocket upgrade", s.srv.cfg.ConnectTimeout)})
}
