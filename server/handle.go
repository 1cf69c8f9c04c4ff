package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
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
	if e := s.validate(f); e.message != "" {
		s.protocolError(e, receipt)
		return true
	}
	if isControl(f, receipt) && !s.allowControl(now) {
		s.fail(ending{reason: outcome.CloseControlFlood, receipt: receipt,
			detail: fmt.Sprintf("at most %d SUBSCRIBE, UNSUBSCRIBE, BEGIN, COMMIT, ABORT and receipt-requesting frames per %v", s.srv.cfg.ControlLimit, s.srv.cfg.ControlWindow)})
		return true
	}
	r := s.srv.cfg.Chain.Handle(&s.st, f, now)
	switch r.Outcome {
	case interceptor.Drop:
		// A dropped frame may still have carried a newer token.
		return s.checkExpiry(now)
	case interceptor.Reject:
		reason := r.Reason.Close()
		if reason == nil {
			reason = outcome.CloseProtocolError
		}
		s.fail(ending{reason: reason, kind: r.Reason.String(), message: r.Message, detail: r.Detail, receipt: receipt,
			headers: rejectRetryHeaders(r.RetryAfter)})
		return true
	}
	if s.checkExpiry(now) {
		return true
	}

	switch f.Command {
	case stompframe.CommandConnect, stompframe.CommandStomp:
		return s.onConnect(f)
	case stompframe.CommandSend:
		if end := s.onSend(f, receipt, now); end {
			return true
		}
	case stompframe.CommandSubscribe:
		end, answered := s.onSubscribe(f, receipt)
		if end {
			return true
		}
		if answered {
			return false
		}
	case stompframe.CommandUnsubscribe:
		s.onUnsubscribe(f)
	case stompframe.CommandAck, stompframe.CommandNack:
		// Delivery is at-most-once: the message left the server when it
		// was queued, so ACK and NACK only need to be well-formed
		// (validate checked them) and, inside a transaction, name an open
		// one.
	case stompframe.CommandBegin:
		if s.begin(f.Get("transaction"), receipt) {
			return true
		}
	case stompframe.CommandCommit:
		// A COMMIT the chain drops is dropped silently, like a SEND over
		// the limit: no RECEIPT.
		if end, dropped := s.commit(f.Get("transaction"), receipt, now); end || dropped {
			return end
		}
	case stompframe.CommandAbort:
		s.abortTransaction(f.Get("transaction"))
	case stompframe.CommandDisconnect:
		if receipt != "" {
			s.reply(s.receiptFrame(receipt))
		}
		s.closeAfter(outcome.CloseNormal, "")
		return true
	}
	if receipt != "" && !s.reply(s.receiptFrame(receipt)) {
		return true
	}
	return false
}

// frameError is why a frame is answered with ERROR and a close: kind is
// the bounded label it is counted under, message the ERROR frame's message
// header, detail its body. The zero value means no error.
type frameError struct {
	kind, message, detail string
}

// malformed is a frameError of kind "malformed".
func malformed(message, detail string) frameError {
	return frameError{kind: outcome.KindMalformed, message: message, detail: detail}
}

// validate checks what makes f malformed for this session's state and
// version; the zero frameError means f is fine.
func (s *session) validate(f *stompframe.Frame) frameError {
	cmd := f.Command
	if !stompframe.IsClientCommand(cmd) {
		return frameError{outcome.KindUnknownCommand, "unknown command", fmt.Sprintf("%q is not a STOMP client frame", cmd)}
	}
	isConnect := cmd == stompframe.CommandConnect || cmd == stompframe.CommandStomp
	if !s.connected.Load() {
		if !isConnect {
			return frameError{outcome.KindNotConnected, "not connected", fmt.Sprintf("%s before CONNECT", cmd)}
		}
		return frameError{}
	}
	if isConnect {
		return malformed("already connected", "a session sends CONNECT once")
	}
	need := func(names ...string) frameError {
		for _, n := range names {
			if _, ok := f.Lookup(n); !ok {
				return frameError{outcome.KindMissingHeader, "missing header", fmt.Sprintf("%s requires the %s header", cmd, n)}
			}
		}
		return frameError{}
	}
	switch cmd {
	case stompframe.CommandSend:
		if e := needDestination(f); e.message != "" {
			return e
		}
		return s.inOpenTransaction(f)
	case stompframe.CommandSubscribe:
		if e := needDestination(f); e.message != "" {
			return e
		}
		if s.version >= stompframe.V11 {
			if e := need("id"); e.message != "" {
				return e
			}
		}
		if _, err := broker.ParseAckMode(f.Get("ack")); err != nil {
			return malformed("invalid ack mode", err.Error())
		}
	case stompframe.CommandUnsubscribe:
		if s.version >= stompframe.V11 {
			return need("id")
		}
		_, hasID := f.Lookup("id")
		_, hasDest := f.Lookup("destination")
		if !hasID && !hasDest {
			return frameError{outcome.KindMissingHeader, "missing header", "UNSUBSCRIBE requires the id or destination header"}
		}
	case stompframe.CommandAck, stompframe.CommandNack:
		var e frameError
		switch s.version {
		case stompframe.V12:
			e = need("id")
		case stompframe.V11:
			e = need("message-id", "subscription")
		default:
			e = need("message-id")
		}
		if e.message != "" {
			return e
		}
		return s.inOpenTransaction(f)
	case stompframe.CommandBegin:
		if e := need("transaction"); e.message != "" {
			return e
		}
		if tx := f.Get("transaction"); s.txs[tx] != nil {
			return malformed("duplicate transaction", fmt.Sprintf("transaction %q is already open", tx))
		}
	case stompframe.CommandCommit, stompframe.CommandAbort:
		if e := need("transaction"); e.message != "" {
			return e
		}
		if tx := f.Get("transaction"); s.txs[tx] == nil {
			return malformed("unknown transaction", fmt.Sprintf("transaction %q is not open", tx))
		}
	}
	return frameError{}
}

// needDestination checks that f (a SEND or SUBSCRIBE) names a
// destination, and a non-empty one.
func needDestination(f *stompframe.Frame) frameError {
	dest, ok := f.Lookup("destination")
	if !ok {
		return frameError{outcome.KindMissingHeader, "missing header", fmt.Sprintf("%s requires the destination header", f.Command)}
	}
	if dest == "" {
		return malformed("invalid destination", "the destination header is empty")
	}
	return frameError{}
}

// inOpenTransaction checks that the transaction f (a SEND, ACK or NACK)
// names, if it names one, is open.
func (s *session) inOpenTransaction(f *stompframe.Frame) frameError {
	if tx, ok := f.Lookup("transaction"); ok && s.txs[tx] == nil {
		return malformed("unknown transaction", fmt.Sprintf("transaction %q is not open", tx))
	}
	return frameError{}
}

// protocolError answers a malformed frame with ERROR (extra headers
// added) and a close, counted under e.kind by fail.
func (s *session) protocolError(e frameError, receipt string, extra ...stompframe.Header) {
	s.fail(ending{reason: outcome.CloseProtocolError, kind: e.kind, message: e.message, detail: e.detail, receipt: receipt, headers: extra})
}

func (s *session) onConnect(f *stompframe.Frame) bool {
	v, ok := stompframe.Negotiate(f.Get("accept-version"))
	if !ok {
		s.protocolError(frameError{outcome.KindUnsupportedVersion, "unsupported protocol version",
			"Supported protocol versions are " + supportedVersions}, "",
			stompframe.Header{Name: "version", Value: supportedVersions})
		return true
	}
	if v > s.maxVersion {
		v = s.maxVersion
	}
	cx, cy, err := parseHeartBeat(f.Get("heart-beat"))
	if err != nil {
		s.protocolError(malformed("invalid heart-beat", err.Error()), "")
		return true
	}
	if bound := s.srv.cfg.MaxHeartBeat; cx > bound || cy > bound {
		cx, cy = capHeartBeat(cx, bound), capHeartBeat(cy, bound)
		s.srv.cfg.Observer.HeartBeatCapped()
	}
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
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
	s.srv.reg.bind(s)
	s.send(stompframe.Append(nil, &c, v))
	s.startHeartBeats(cx, cy)
	return false
}

func (s *session) onSend(f *stompframe.Frame, receipt string, now time.Time) bool {
	if dest := f.Get("destination"); strings.HasPrefix(dest, UserPrefix) {
		if !s.mayPublishUser(dest) {
			s.protocolError(frameError{kind: outcome.RejectPermission.String(), message: "permission denied",
				detail: fmt.Sprintf("SEND to %q: user destinations are the backend's; a client needs a send pattern that starts with %s", dest, UserPrefix)}, receipt)
			return true
		}
		s.stampSender(f)
	}
	m := broker.NewMessage(s.srv.cfg.Broker.NextID(), f)
	if s.srv.cfg.Tracer != nil {
		defer s.srv.traceSend(m)()
	}
	if name, ok := f.Lookup("transaction"); ok {
		return s.hold(name, m, receipt)
	}
	return s.publish(m, receipt, now)
}

// publish delivers m, read (or committed) at now, or hands it to the
// AppHandler when it is for an app destination, and reports whether the
// session is ending.
func (s *session) publish(m *broker.Message, receipt string, now time.Time) (end bool) {
	if s.srv.isApp(m.Destination) {
		return s.handleApp(m, receipt)
	}
	s.srv.stampArrival(m, outcome.DeliveryLocal, now.UnixNano())
	s.srv.deliver(m, &s.batch)
	return false
}

// onSubscribe subscribes; answered reports that the RECEIPT (if asked
// for) is not handle's to send: a SUBSCRIBE with a position has it sent
// with the recovery's outcome.
func (s *session) onSubscribe(f *stompframe.Frame, receipt string) (end, answered bool) {
	id, ok := f.Lookup("id")
	if !ok {
		// STOMP 1.0 allowed SUBSCRIBE without id; the destination then
		// names the subscription.
		id = f.Get("destination")
	}
	if strings.HasPrefix(f.Get("destination"), PresencePrefix+"/") { // presence watch: presence.go
		return s.watchPresence(f, id, receipt), false
	}
	if _, dup := s.subs[id]; dup {
		s.protocolError(malformed("duplicate subscription", fmt.Sprintf("subscription id %q is already in use", id)), receipt)
		return true, false
	}
	if len(s.subs) >= s.srv.cfg.MaxSubscriptions {
		s.protocolError(malformed("too many subscriptions", fmt.Sprintf("at most %d subscriptions per session", s.srv.cfg.MaxSubscriptions)), receipt)
		return true, false
	}
	start, positioned, err := subscribeStart(f)
	if err != nil {
		s.protocolError(malformed("invalid stream position", err.Error()), receipt)
		return true, false
	}
	ack, _ := broker.ParseAckMode(f.Get("ack"))
	dest := f.Get("destination")
	opts := s.srv.destinationOptions(dest)
	var to broker.Subscriber = s
	internal := dest
	user := ""
	if strings.HasPrefix(dest, UserPrefix) {
		var ok bool
		internal, ok = s.userSubscription(dest)
		if !ok {
			s.protocolError(frameError{kind: outcome.RejectPermission.String(), message: "permission denied",
				detail: fmt.Sprintf("SUBSCRIBE to %q: user destinations are subscribed to as %s<name>", dest, userQueuePrefix)}, receipt)
			return true, false
		}
		user = dest
	}
	if positioned && user == "" && !opts.Latest {
		return s.subscribeHistory(f, id, dest, ack, opts, start, receipt), true
	}
	switch {
	case opts.Latest:
		to = &latestSubscriber{s: s, user: user, rule: opts.Rule}
	case user != "":
		to = &userSubscriber{s: s, dest: user}
	}
	sub := broker.NewSubscription(id, internal, ack, s.version, to)
	if s.subscribe(sub, opts, dest, receipt) {
		return true, false
	}
	return s.joinPresence(f, sub, receipt), false // presence membership: presence.go
}

func (s *session) onUnsubscribe(f *stompframe.Frame) {
	id, ok := f.Lookup("id")
	if !ok {
		id = f.Get("destination")
	}
	if s.unwatchPresence(id) { // presence watch: presence.go
		return
	}
	sub, ok := s.subs[id]
	if !ok {
		// Unsubscribing an unknown id is harmless; the spec does not make
		// it an error.
		return
	}
	delete(s.subs, id)
	s.unsubscribe(id, sub)
}

func (s *session) receiptFrame(id string) []byte {
	r := stompframe.Frame{Command: stompframe.CommandReceipt}
	r.Add("receipt-id", id)
	return stompframe.Append(nil, &r, s.version)
}
