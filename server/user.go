package server

import (
	"strings"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

// User destinations follow Spring's convention. A client SUBSCRIBEs to
// "/user/queue/<name>"; the server subscribes the session to
// "/user/<principal>/queue/<name>", the destination a backend (or a
// client whose claims allow it) publishes to, and which the broker and
// the relay treat like any other. Every session of the principal, on
// every instance, receives what is published there, and nobody else: a
// client may not SUBSCRIBE to "/user/<someone>/..." itself. The MESSAGE
// frames carry the destination the client subscribed to.
//
// User destinations are the backend's channel to one principal, so a
// client may not SEND to them by default: only a principal whose send
// patterns name the prefix literally (a pattern that starts with
// "/user/", such as "/user/*/queue/chat") may, and a permission that
// covers every destination (no send list, "**", "/**") does not. A
// MESSAGE a client sent there carries SenderHeader, set by the server to
// the sender's principal; a sender header the client wrote is replaced,
// so a recipient tells a message from another client from the backend's
// (which carries no SenderHeader unless the backend set one).
const (
	// UserPrefix starts every user destination.
	UserPrefix = "/user/"
	// userQueuePrefix is what a client subscribes to.
	userQueuePrefix = UserPrefix + "queue/"
	// SenderHeader names the principal that sent a MESSAGE on a user
	// destination. The server sets it on every client SEND there and a
	// client cannot forge it.
	SenderHeader = "sender"
)

// UserDestination returns the destination that reaches the sessions of
// principal subscribed to "/user/queue/<name>".
func UserDestination(principal, name string) string {
	return UserPrefix + principal + "/queue/" + name
}

// principalName is the session's principal name: the PrincipalStage's,
// or for a session that no stage named (a chain without one), the name an
// anonymous session gets there. Called on the reader goroutine.
func (s *session) principalName() string {
	if p := s.st.Principal; p != nil {
		return p.Name
	}
	return "anonymous-" + s.st.ID
}

// userSubscription maps the destination of a SUBSCRIBE under UserPrefix
// to the broker destination the session is subscribed to. ok is false
// when the client may not subscribe there: anything under "/user/" but
// "/user/queue/<name>".
func (s *session) userSubscription(dest string) (internal string, ok bool) {
	name, found := strings.CutPrefix(dest, userQueuePrefix)
	if !found || name == "" {
		return "", false
	}
	return UserDestination(s.principalName(), name), true
}

// mayPublishUser reports whether the session may SEND to dest, a user
// destination: only when one of its principal's send patterns starts
// with UserPrefix and matches dest (see UserPrefix).
func (s *session) mayPublishUser(dest string) bool {
	p := s.st.Principal
	if p == nil {
		return false
	}
	for _, pat := range p.Send {
		if strings.HasPrefix(pat, UserPrefix) && interceptor.MatchDestination(pat, dest) {
			return true
		}
	}
	return false
}

// stampSender replaces every SenderHeader f carries with one naming
// the session's principal. f is the decoded SEND; the message built
// from it copies its headers.
func (s *session) stampSender(f *stompframe.Frame) {
	hs := f.Headers[:0]
	for _, h := range f.Headers {
		if h.Name != SenderHeader {
			hs = append(hs, h)
		}
	}
	f.Headers = append(hs, stompframe.Header{Name: SenderHeader, Value: s.principalName()})
}

// userSubscriber delivers messages of a user destination to its session
// with the destination the client subscribed to.
type userSubscriber struct {
	s    *session
	dest string // the client's "/user/queue/<name>"
}

// Deliver rewrites m's destination and hands the copy to the session.
// The copy shares m's headers and body; it is encoded for the
// subscriber's version when written.
func (u *userSubscriber) Deliver(sub *broker.Subscription, m *broker.Message, b *broker.Batch) bool {
	ok := u.s.Deliver(sub, m.Redirected(u.dest), b)
	if ok && u.s.srv.backend != nil {
		u.s.srv.backend.UserDelivered()
	}
	return ok
}
