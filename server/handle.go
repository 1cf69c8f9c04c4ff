package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

// supportedVersions is the CONNECTED/ERROR version header listing what
// the server speaks.
const supportedVersions = "1.0,1.1,1.2"

// handle processes one decoded frame and reports whether the session is
// ending. Validation that makes a frame malformed comes first, then the
// interceptor chain, then the command.
func (s *session) handle(f *stompframe.Frame, now time.Time) (end bool) {
	receipt := f.Get("receipt")
	if msg, detail := s.validate(f); msg != "" {
		s.protocolError(f.Command, msg, detail, receipt)
		return true
	}
	r := s.srv.cfg.Chain.Handle(&s.st, f, now)
	switch r.Outcome {
	case interceptor.Drop:
		return false
	case interceptor.Reject:
		reason := closeRejected
		switch r.Reason {
		case interceptor.RejectAbuse, interceptor.RejectBanned:
			// A banned principal's CONNECT is the same abuse
			// carrying on from another connection: counted with the
			// escalation that banned it, not as a credential failure.
			reason = interceptor.RejectAbuse
		case interceptor.RejectAuth:
			reason = closeAuthFailed
			s.srv.cfg.Observer.ProtocolErrorClose(r.Reason)
		default:
			s.srv.cfg.Observer.ProtocolErrorClose(r.Reason)
		}
		s.fail(reason, websocket.StatusPolicyViolation, r.Message, r.Detail, receipt)
		return true
	}

	switch f.Command {
	case stompframe.CommandConnect, stompframe.CommandStomp:
		return s.onConnect(f)
	case stompframe.CommandSend:
		if end := s.onSend(f); end {
			return true
		}
	case stompframe.CommandSubscribe:
		if end := s.onSubscribe(f, receipt); end {
			return true
		}
	case stompframe.CommandUnsubscribe:
		s.onUnsubscribe(f)
	case stompframe.CommandAck, stompframe.CommandNack:
		// Delivery is at-most-once: the message left the server when it
		// was queued, so ACK and NACK only need to be well-formed
		// (validate checked them) and, inside a transaction, name an open
		// one.
	case stompframe.CommandBegin:
		if len(s.txs) >= s.srv.cfg.MaxTransactions {
			s.protocolError(f.Command, "too many transactions", fmt.Sprintf("at most %d open transactions per session", s.srv.cfg.MaxTransactions), receipt)
			return true
		}
		if s.txs == nil {
			s.txs = make(map[string][]*broker.Message)
		}
		s.txs[f.Get("transaction")] = []*broker.Message{}
	case stompframe.CommandCommit:
		tx := f.Get("transaction")
		for _, m := range s.txs[tx] {
			s.publish(m)
		}
		delete(s.txs, tx)
	case stompframe.CommandAbort:
		delete(s.txs, f.Get("transaction"))
	case stompframe.CommandDisconnect:
		if receipt != "" {
			s.send(s.receiptFrame(receipt))
		}
		s.closeAfter(closeNormal, websocket.StatusNormalClosure, "")
		return true
	}
	if receipt != "" {
		s.send(s.receiptFrame(receipt))
	}
	return false
}

// validate checks what makes f malformed for this session's state and
// version, and returns the ERROR message and detail, or "" if f is fine.
func (s *session) validate(f *stompframe.Frame) (msg, detail string) {
	cmd := f.Command
	if !stompframe.IsClientCommand(cmd) {
		return "unknown command", fmt.Sprintf("%q is not a STOMP client frame", cmd)
	}
	isConnect := cmd == stompframe.CommandConnect || cmd == stompframe.CommandStomp
	if !s.connected.Load() {
		if !isConnect {
			return "not connected", fmt.Sprintf("%s before CONNECT", cmd)
		}
		return "", ""
	}
	if isConnect {
		return "already connected", "a session sends CONNECT once"
	}
	need := func(names ...string) (string, string) {
		for _, n := range names {
			if _, ok := f.Lookup(n); !ok {
				return "missing header", fmt.Sprintf("%s requires the %s header", cmd, n)
			}
		}
		return "", ""
	}
	switch cmd {
	case stompframe.CommandSend:
		if m, d := need("destination"); m != "" {
			return m, d
		}
		if f.Get("destination") == "" {
			return "invalid destination", "the destination header is empty"
		}
		if tx, ok := f.Lookup("transaction"); ok {
			if _, open := s.txs[tx]; !open {
				return "unknown transaction", fmt.Sprintf("transaction %q is not open", tx)
			}
		}
	case stompframe.CommandSubscribe:
		if m, d := need("destination"); m != "" {
			return m, d
		}
		if f.Get("destination") == "" {
			return "invalid destination", "the destination header is empty"
		}
		if s.version >= stompframe.V11 {
			if m, d := need("id"); m != "" {
				return m, d
			}
		}
		if _, err := broker.ParseAckMode(f.Get("ack")); err != nil {
			return "invalid ack mode", err.Error()
		}
	case stompframe.CommandUnsubscribe:
		if s.version >= stompframe.V11 {
			return need("id")
		}
		_, hasID := f.Lookup("id")
		_, hasDest := f.Lookup("destination")
		if !hasID && !hasDest {
			return "missing header", "UNSUBSCRIBE requires the id or destination header"
		}
	case stompframe.CommandAck, stompframe.CommandNack:
		var m, d string
		switch s.version {
		case stompframe.V12:
			m, d = need("id")
		case stompframe.V11:
			m, d = need("message-id", "subscription")
		default:
			m, d = need("message-id")
		}
		if m != "" {
			return m, d
		}
		if tx, ok := f.Lookup("transaction"); ok {
			if _, open := s.txs[tx]; !open {
				return "unknown transaction", fmt.Sprintf("transaction %q is not open", tx)
			}
		}
	case stompframe.CommandBegin:
		if m, d := need("transaction"); m != "" {
			return m, d
		}
		if _, open := s.txs[f.Get("transaction")]; open {
			return "duplicate transaction", fmt.Sprintf("transaction %q is already open", f.Get("transaction"))
		}
	case stompframe.CommandCommit, stompframe.CommandAbort:
		if m, d := need("transaction"); m != "" {
			return m, d
		}
		if _, open := s.txs[f.Get("transaction")]; !open {
			return "unknown transaction", fmt.Sprintf("transaction %q is not open", f.Get("transaction"))
		}
	}
	return "", ""
}

// protocolError answers a malformed frame with ERROR and a close.
func (s *session) protocolError(cmd, msg, detail, receipt string) {
	kind := "malformed"
	switch msg {
	case "unknown command":
		kind = "unknown_command"
	case "missing header":
		kind = "missing_header"
	case "not connected":
		kind = "not_connected"
	}
	s.srv.cfg.Observer.ProtocolErrorClose(kind)
	s.fail(closeProtocolError, websocket.StatusPolicyViolation, msg, detail, receipt)
}

func (s *session) onConnect(f *stompframe.Frame) bool {
	v, ok := stompframe.Negotiate(f.Get("accept-version"))
	if !ok {
		s.srv.cfg.Observer.ProtocolErrorClose("unsupported_version")
		e := stompframe.Frame{Command: stompframe.CommandError}
		e.Add("version", supportedVersions)
		e.Add("content-type", "text/plain")
		body := "Supported protocol versions are " + supportedVersions
		e.Add("content-length", strconv.Itoa(len(body)))
		e.Add("message", "unsupported protocol version")
		e.Body = []byte(body)
		if s.send(stompframe.Append(nil, &e, stompframe.V10)) {
			s.closeAfter(closeProtocolError, websocket.StatusPolicyViolation, "unsupported protocol version")
		}
		return true
	}
	if v > s.maxVersion {
		v = s.maxVersion
	}
	cx, cy, err := parseHeartBeat(f.Get("heart-beat"))
	if err != nil {
		s.protocolError(f.Command, "invalid heart-beat", err.Error(), "")
		return true
	}
	s.version = v
	s.dec.SetVersion(v)

	c := stompframe.Frame{Command: stompframe.CommandConnected}
	c.Add("version", v.String())
	c.Add("heart-beat", fmt.Sprintf("%d,%d", s.srv.cfg.HeartBeatSend.Milliseconds(), s.srv.cfg.HeartBeatReceive.Milliseconds()))
	c.Add("server", s.srv.cfg.Name)
	c.Add("session", s.st.ID)
	if p := s.st.Principal; p != nil {
		c.Add("user-name", p.Name)
	}
	s.connected.Store(true)
	s.send(stompframe.Append(nil, &c, v))
	s.startHeartBeats(cx, cy)
	return false
}

func (s *session) onSend(f *stompframe.Frame) bool {
	m := broker.NewMessage(s.srv.cfg.Broker.NextID(), f)
	if tx, ok := f.Lookup("transaction"); ok {
		pending := s.txs[tx]
		if len(pending) >= s.srv.cfg.MaxTransactionFrames {
			s.protocolError(f.Command, "transaction too large", fmt.Sprintf("at most %d SEND frames per transaction", s.srv.cfg.MaxTransactionFrames), f.Get("receipt"))
			return true
		}
		s.txs[tx] = append(pending, m)
		return false
	}
	s.publish(m)
	return false
}

func (s *session) publish(m *broker.Message) {
	if s.srv.cfg.Relay != nil {
		s.srv.cfg.Relay.Publish(m)
	}
	n := s.srv.cfg.Broker.Publish(m)
	s.srv.cfg.Observer.Delivered(m.Destination, n)
}

func (s *session) onSubscribe(f *stompframe.Frame, receipt string) bool {
	id, ok := f.Lookup("id")
	if !ok {
		// STOMP 1.0 allowed SUBSCRIBE without id; the destination then
		// names the subscription.
		id = f.Get("destination")
	}
	if _, dup := s.subs[id]; dup {
		s.protocolError(f.Command, "duplicate subscription", fmt.Sprintf("subscription id %q is already in use", id), receipt)
		return true
	}
	if len(s.subs) >= s.srv.cfg.MaxSubscriptions {
		s.protocolError(f.Command, "too many subscriptions", fmt.Sprintf("at most %d subscriptions per session", s.srv.cfg.MaxSubscriptions), receipt)
		return true
	}
	ack, _ := broker.ParseAckMode(f.Get("ack"))
	sub := broker.NewSubscription(id, f.Get("destination"), ack, s.version, s)
	if s.subs == nil {
		s.subs = make(map[string]*broker.Subscription)
	}
	s.subs[id] = sub
	s.srv.cfg.Broker.Subscribe(sub)
	return false
}

func (s *session) onUnsubscribe(f *stompframe.Frame) {
	id, ok := f.Lookup("id")
	if !ok {
		id = f.Get("destination")
	}
	sub, ok := s.subs[id]
	if !ok {
		// Unsubscribing an unknown id is harmless; the spec does not make
		// it an error.
		return
	}
	delete(s.subs, id)
	s.srv.cfg.Broker.Unsubscribe(sub)
}

func (s *session) receiptFrame(id string) []byte {
	r := stompframe.Frame{Command: stompframe.CommandReceipt}
	r.Add("receipt-id", id)
	return stompframe.Append(nil, &r, s.version)
}
