package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// Close reasons reported to Observer.SessionClosed: bounded label values
// for metrics and logs.
const (
	// CloseNormal: DISCONNECT, or a clean close by the client.
	CloseNormal = "normal"
	// CloseProtocolError: an ERROR for a frame the server could not
	// accept, or a stage rejected it (permission).
	CloseProtocolError = "protocol_error"
	// CloseSlowConsumer: the outbound queue was full.
	CloseSlowConsumer = "slow_consumer"
	// CloseHeartBeat: the client was silent past the negotiated
	// heart-beat interval plus tolerance.
	CloseHeartBeat = "heartbeat_timeout"
	// CloseConnectTimeout: no CONNECT in time after the upgrade.
	CloseConnectTimeout = "connect_timeout"
	// CloseAuthFailed: missing, invalid or expired credentials.
	CloseAuthFailed = "auth_failed"
	// CloseRateLimitAbuse: the session kept flooding past its limit, or
	// its principal is banned for doing so.
	CloseRateLimitAbuse = "rate_limit_abuse"
	// CloseShutdown: the server is shutting down.
	CloseShutdown = "shutdown"
	// ClosePanic: a panic was recovered while serving the session.
	ClosePanic = "panic"
	// CloseClientGone: the connection broke without a clean close.
	CloseClientGone = "client_gone"
	// CloseTokenExpired: the credentials the session was opened with
	// expired and no newer ones arrived.
	CloseTokenExpired = "token_expired"
	// CloseControlFlood: more control frames (SUBSCRIBE, UNSUBSCRIBE,
	// BEGIN, COMMIT, ABORT, frames asking for a receipt) than the
	// session's budget.
	CloseControlFlood = "control_flood"
	// ClosePingTimeout: a session that negotiated no STOMP heart-beat did
	// not answer a WebSocket ping within the timeout.
	ClosePingTimeout = "ping_timeout"
	// CloseSessionCap: a stage refused CONNECT because the principal
	// already holds its maximum number of sessions.
	CloseSessionCap = "session_cap"
)

// session is one STOMP session on one WebSocket connection.
//
// Goroutines: the HTTP handler goroutine that accepted the connection is
// the session's reader and owner (serve); a writer goroutine exists only
// while the outbound queue is non-empty, so an idle session has one
// goroutine. Heart-beats and deadlines use runtime timers, not goroutines.
type session struct {
	srv  *Server
	conn *websocket.Conn
	st   interceptor.Session

	// Owned by the reader goroutine.
	dec        *stompframe.Decoder
	version    stompframe.Version // written by the reader under mu; read by others under mu
	maxVersion stompframe.Version // from the negotiated subprotocol
	subs       map[string]*broker.Subscription
	txs        map[string]*transaction
	txBytes    int                       // bytes held by all open transactions
	control    *sessionlimit.FixedWindow // control-frame budget; nil until the first

	connected atomic.Bool
	lastRead  atomic.Int64 // Unix nanoseconds of the last WebSocket message read
	lastWrite atomic.Int64 // Unix nanoseconds of the last WebSocket write

	// mu guards the outbound queue and the end state below.
	mu          sync.Mutex
	queue       []outItem
	queuedBytes int        // bytes of the frames in queue
	inflight    int        // frames the writer took and has not finished writing
	inflightB   int        // their bytes
	drained     *sync.Cond // on mu: the writer finished a batch, or closing
	writing     bool       // a writer goroutine is running
	closing     bool       // no more frames are queued, except the final close
	reason      string     // first close reason recorded
	hbIn        *time.Timer
	hbOut       *time.Timer
	inEvery     time.Duration // negotiated incoming heart-beat; 0 none
	outEvery    time.Duration // negotiated outgoing heart-beat; 0 none

	expiry  *time.Timer // ends the session when its credentials expire
	expires time.Time   // what expiry is armed for

	writers sync.WaitGroup // the writer goroutine, when one runs

	ping pinger // WebSocket pings when the client sends no heart-beats

	// raw is the hijacked TCP connection under conn. abort closes it
	// directly: coder/websocket's CloseNow waits, up to seconds, for a
	// close handshake or goroutines in progress, and abort must not.
	raw net.Conn

	// onEnd is what OnSessionEnd attached to the upgrade request; run
	// once, after the session has ended.
	onEnd []func()
}

func newSession(srv *Server, conn *websocket.Conn, ip netip.Addr, q url.Values) *session {
	s := &session{
		srv:        srv,
		conn:       conn,
		dec:        stompframe.NewDecoder(srv.cfg.Limits),
		version:    stompframe.V12,
		maxVersion: stompframe.V12,
	}
	s.drained = sync.NewCond(&s.mu)
	s.st.ID = newSessionID()
	s.st.RemoteIP = ip
	if len(q) > 0 {
		s.st.Query = q
	}
	now := time.Now().UnixNano()
	s.lastRead.Store(now)
	s.lastWrite.Store(now)
	return s
}

// serve runs the session on the calling goroutine until it ends.
func (s *session) serve() {
	s.mu.Lock()
	s.hbIn = time.AfterFunc(s.srv.cfg.ConnectTimeout, s.connectTimeout)
	s.mu.Unlock()

	reason := s.readLoop()

	s.mu.Lock()
	s.closing = true
	s.drained.Broadcast()
	if s.reason == "" {
		s.reason = reason
	}
	reason = s.reason
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
	s.writers.Wait()
	_ = s.conn.CloseNow()

	for _, sub := range s.subs {
		s.srv.cfg.Broker.Unsubscribe(sub)
	}
	s.discardTransactions()
	s.srv.reg.remove(s)
	s.srv.cfg.Chain.SessionClosed(&s.st)
	runAll(s.onEnd)
	s.srv.cfg.Observer.SessionClosed(reason)
	if reason != CloseNormal && reason != CloseClientGone {
		s.srv.cfg.Logger.Info("session closed", "session", s.st.ID, "ip", s.st.RemoteIP.String(), "reason", reason)
	}
}

// readLoop reads WebSocket messages until the session ends and returns the
// close reason as the reader saw it. It stops the session's pings as it
// returns: they need a reader to take in their pongs.
func (s *session) readLoop() (reason string) {
	defer s.stopPings()
	defer func() {
		if v := recover(); v != nil {
			s.srv.cfg.Observer.Panic()
			s.srv.cfg.Logger.Error("panic in session", "session", s.st.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.fail(ClosePanic, websocket.StatusInternalError, "internal error", "the server failed while handling a frame", "")
			s.drain()
			reason = ClosePanic
		}
	}()
	limit := s.srv.cfg.Limits.MaxFrameSize
	for {
		typ, r, err := s.conn.Reader(context.Background())
		if err != nil {
			return CloseClientGone
		}
		buf, err := readMessage(r, limit)
		if err != nil {
			putReadBuf(buf)
			if errors.Is(err, errMessageTooLarge) {
				s.srv.cfg.Observer.ProtocolErrorClose("frame_too_large")
				// No drain: the rest of the message is unread, and the
				// close handshake skips it; another Reader would parse
				// it as frame headers.
				s.fail(CloseProtocolError, websocket.StatusMessageTooBig, "frame too large",
					fmt.Sprintf("a WebSocket message exceeded the %d-byte frame limit", limit), "")
				return CloseProtocolError
			}
			return CloseClientGone
		}
		now := time.Now()
		s.lastRead.Store(now.UnixNano())
		if typ == websocket.MessageText && !utf8.Valid(*buf) {
			// RFC 6455 section 8.1: a text message that is not UTF-8
			// fails the connection with 1007. Binary messages may carry
			// any body; their headers are checked by the decoder.
			putReadBuf(buf)
			s.srv.cfg.Observer.ProtocolErrorClose(kindInvalidUTF8)
			s.fail(CloseProtocolError, websocket.StatusInvalidFramePayloadData, "invalid UTF-8",
				"a text WebSocket message was not valid UTF-8 (RFC 6455 section 8.1); send binary bodies in binary messages", "")
			s.drain()
			return ""
		}
		s.dec.Feed(*buf)
		done := s.decodeAll(now)
		putReadBuf(buf)
		if done {
			s.drain()
			return ""
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
			s.srv.cfg.Observer.ProtocolErrorClose(protocolErrorKind(pe))
			s.fail(CloseProtocolError, websocket.StatusPolicyViolation, pe.Message, pe.Detail, "")
			return true
		}
		if f == nil {
			return false
		}
		if s.handle(f, now) {
			return true
		}
	}
}

// drain keeps reading (and discarding) until the writer has closed the
// connection, so the close handshake's reply is consumed and a client
// that keeps sending does not block on a full socket.
func (s *session) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), s.srv.cfg.WriteTimeout+5*time.Second)
	defer cancel()
	for {
		_, r, err := s.conn.Reader(ctx)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// kindInvalidUTF8 is the protocol-error kind of text messages, commands
// and headers that are not UTF-8.
const kindInvalidUTF8 = "invalid_utf8"

func protocolErrorKind(pe *stompframe.ProtocolError) string {
	switch {
	case errors.Is(pe, stompframe.ErrInvalidUTF8):
		return kindInvalidUTF8
	case errors.Is(pe, stompframe.ErrFrameTooLarge):
		return "frame_too_large"
	case errors.Is(pe, stompframe.ErrBadEscape):
		return "bad_escape"
	case errors.Is(pe, stompframe.ErrTooManyHeaders), errors.Is(pe, stompframe.ErrHeaderLineTooLong):
		return "header_too_large"
	}
	return "malformed"
}

// end records reason as the session's close reason if none is recorded
// yet and marks the session closing. It reports whether this call was the
// first to end the session.
func (s *session) endLocked(reason string) bool {
	if s.closing {
		return false
	}
	s.closing = true
	s.reason = reason
	s.drained.Broadcast()
	return true
}

// fail queues an ERROR frame (message header msg, body detail, receipt-id
// when the offending frame asked for a receipt, then any extra headers)
// and a close with code, after everything already queued.
//
// The ERROR frame goes out in a text message, and its parts may carry
// client data (an echoed receipt id, a stage's message quoting a header):
// bytes that are not UTF-8 are replaced, so the frame never makes a
// browser drop the socket before it has read why.
func (s *session) fail(reason string, code websocket.StatusCode, msg, detail, receipt string, extra ...stompframe.Header) {
	msg, detail, receipt = validUTF8(msg), validUTF8(detail), validUTF8(receipt)
	f := stompframe.Frame{Command: stompframe.CommandError}
	f.Add("message", msg)
	if receipt != "" {
		f.Add("receipt-id", receipt)
	}
	for _, h := range extra {
		f.Add(validUTF8(h.Name), validUTF8(h.Value))
	}
	f.Add("content-type", "text/plain")
	body := []byte(detail)
	if len(body) > 0 {
		f.Add("content-length", fmt.Sprint(len(body)))
		f.Body = body
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.endLocked(reason) {
		return
	}
	// version is written under mu (onConnect) because fail also runs on
	// timer and shutdown goroutines.
	raw := stompframe.Append(nil, &f, s.version)
	s.pushLocked(outItem{raw: raw}, len(raw))
	s.pushLocked(outItem{close: true, code: code, reason: closeText(msg)}, 0)
}

// validUTF8 returns v with every byte sequence that is not UTF-8 replaced
// by U+FFFD; valid input is returned as it is, without copying.
func validUTF8(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// closeText fits msg into a WebSocket close reason (at most 123 bytes),
// cutting at a character boundary: the reason must be UTF-8 too.
func closeText(msg string) string {
	if len(msg) <= 120 {
		return msg
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}

// shutdown ends the session for a server shutdown: queued frames are
// flushed, then an ERROR frame and a close with 1001.
func (s *session) shutdown() {
	s.fail(CloseShutdown, websocket.StatusGoingAway, "server shutting down", "the server is shutting down; reconnect to another instance", "")
}

// abort ends the session at once: the queue is discarded and the
// connection closed without a close handshake.
func (s *session) abort(reason string) {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		s.reason = reason
	}
	clear(s.queue)
	s.queue = s.queue[:0]
	s.queuedBytes = 0
	s.drained.Broadcast()
	s.mu.Unlock()
	if s.raw != nil {
		// Every read and write on the connection fails at once; the
		// session's own goroutine then finishes with CloseNow.
		_ = s.raw.Close()
		return
	}
	_ = s.conn.CloseNow()
}

func (s *session) connectTimeout() {
	if s.connected.Load() {
		return
	}
	s.fail(CloseConnectTimeout, websocket.StatusPolicyViolation, "CONNECT timeout",
		fmt.Sprintf("no CONNECT frame within %v of the WebSocket upgrade", s.srv.cfg.ConnectTimeout), "")
}
