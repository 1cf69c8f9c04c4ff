package server

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// checkExpiry ends the session if its principal's credentials have
// expired at now, and otherwise (re)arms the expiry timer when a stage
// set or moved Principal.Expires. It runs on the reader goroutine after
// each frame the chain passed. It reports whether the session is ending.
func (s *session) checkExpiry(now time.Time) bool {
	p := s.st.Principal
	if p == nil || p.Expires.IsZero() {
		return false
	}
	if !now.Before(p.Expires) {
		s.expire(p.Expires)
		return true
	}
	at := p.Expires.UnixNano()
	// The reader is the only goroutine that writes expires, so it reads
	// it without mu: a frame that did not move the expiry, which is
	// nearly every frame, takes no lock that Deliver contends for.
	if at == s.expires {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.box.isClosed() {
		return false
	}
	s.expires = at
	d := p.Expires.Sub(now)
	if s.expiry == nil {
		s.expiry = time.AfterFunc(d, s.expiryFired)
	} else {
		s.expiry.Reset(d)
	}
	return false
}

// expiryFired runs on the timer's goroutine. The reader may have moved the
// expiry in the meantime; only a deadline that has really passed ends the
// session.
func (s *session) expiryFired() {
	s.mu.Lock()
	if s.box.isClosed() {
		s.mu.Unlock()
		return
	}
	at := time.Unix(0, s.expires)
	if left := time.Until(at); left > 0 {
		s.expiry.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.expire(at)
}

// expire ends the session because its credentials expired.
func (s *session) expire(at time.Time) {
	s.fail(ending{reason: outcome.CloseTokenExpired, detail: fmt.Sprintf("the session's credentials expired at %s; reconnect with a new token, or send one in a token header before expiry", at.UTC().Format(time.RFC3339))})
}
