package server

import (
	"strings"

	"github.com/stompgate/stompgate/broker"
)

// User destinations follow Spring's convention. A client SUBSCRIBEs to
// "/user/queue/<name>"; the server subscribes the session to
// "/user/<principal>/queue/<name>", the destination a backend (or a
// client whose claims allow it) publishes to, and which the broker and
// the relay treat like any other. Every session of the principal, on
// every instance, receives what is published there, and nobody else: a
// client may not SUBSCRIBE to "/user/<someone>/..." itself. The MESSAGE
// frames carry the destination the client subscribed to.
const (
	// UserPrefix starts every user destination.
	UserPrefix = "/user/"
	// userQueuePrefix is what a client subscribes to.
	userQueuePrefix = UserPrefix + "queue/"
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
