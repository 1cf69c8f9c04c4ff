package sessioncap

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// DefaultMaxPerPrincipal is a sensible PrincipalConfig.Max (the
// wsserver's -max-sessions-per-principal): the tabs and devices of one
// person. A game tab and a chat tab on a laptop, a second browser, a phone
// and a tablet make five; ten leaves room for reloads whose new socket
// arrives before the old one's close and for a forgotten tab, while a
// token shared with a script is held to ten sessions, ten times the
// per-session send limit.
const DefaultMaxPerPrincipal = 10

// PrincipalConfig configures a PrincipalStage. Limiter and Max are
// required.
type PrincipalConfig struct {
	// Limiter takes and gives back the slots.
	Limiter *Limiter
	// Max is the most sessions one authenticated principal may hold open
	// at once, on every instance together. It must be at least 1.
	Max int
	// Displace makes a principal's newest session take the slot of its
	// oldest when the principal holds Max already, instead of being
	// refused: whoever holds a leaked token open Max times cannot lock
	// its owner out, since the owner's next CONNECT ends the oldest of
	// them. The oldest is the first admitted, by Redis' clock across
	// instances or this instance's order when it decides alone. False:
	// the newest is refused with "too many sessions".
	Displace bool
	// Disconnect ends the session with the given id wherever it runs;
	// required with Displace. cmd/wsserver ends its own sessions with
	// server.Server.Disconnect and asks the other instances over Redis
	// Pub/Sub. It is called on the CONNECTing session's reader goroutine
	// and must not block.
	Disconnect func(sessionID string)
}

// PrincipalStage caps the sessions of each authenticated principal. At a
// CONNECT (or STOMP) whose principal the PrincipalStage before it has set
// and which is not anonymous, it takes a slot; over the cap it rejects the
// frame with outcome.RejectSessionCap, so the session ends with ERROR
// "too many sessions". It gives the slot back in SessionClosed. Place it
// right after interceptor.PrincipalStage.
//
// Anonymous principals are not capped here: each is a fresh name per
// session, and the per-IP cap bounds them.
//
// A PrincipalStage is safe for concurrent use.
type PrincipalStage struct {
	limiter    *Limiter
	max        int
	displace   bool
	disconnect func(sessionID string)

	mu sync.Mutex
	// leases holds the slot of each session that took one. Guarded by mu.
	leases map[*interceptor.Session]Lease
	// admitted lists each principal's sessions that hold a slot here,
	// oldest first. Guarded by mu.
	admitted map[string][]*interceptor.Session
}

var (
	_ interceptor.Stage  = (*PrincipalStage)(nil)
	_ interceptor.Closer = (*PrincipalStage)(nil)
)

// NewPrincipalStage returns a PrincipalStage configured by cfg.
func NewPrincipalStage(cfg PrincipalConfig) (*PrincipalStage, error) {
	if cfg.Limiter == nil {
		return nil, configErrorf("PrincipalConfig.Limiter is nil")
	}
	if cfg.Max < 1 {
		return nil, configErrorf("PrincipalConfig.Max %d is below 1", cfg.Max)
	}
	if cfg.Displace && cfg.Disconnect == nil {
		return nil, configErrorf("PrincipalConfig.Displace needs PrincipalConfig.Disconnect")
	}
	return &PrincipalStage{limiter: cfg.Limiter, max: cfg.Max, displace: cfg.Displace, disconnect: cfg.Disconnect,
		leases: make(map[*interceptor.Session]Lease), admitted: make(map[string][]*interceptor.Session)}, nil
}

// Handle takes the principal's slot at CONNECT and passes every other
// frame.
func (p *PrincipalStage) Handle(s *interceptor.Session, f *stompframe.Frame, _ time.Time) interceptor.Result {
	if f.Command != stompframe.CommandConnect && f.Command != stompframe.CommandStomp {
		return interceptor.Continue()
	}
	if s.Principal == nil || s.Principal.Anonymous {
		return interceptor.Continue()
	}
	p.mu.Lock()
	_, holding := p.leases[s]
	p.mu.Unlock()
	if holding {
		return interceptor.Continue()
	}
	name := s.Principal.Name
	ctx, cancel := context.WithTimeout(context.Background(), DefaultAcquireTimeout)
	defer cancel()
	lease, d, displaced, err := p.limiter.AcquireFor(ctx, ScopePrincipal, name, p.max, s.ID, p.displace)
	if err != nil {
		// Only an invalid name or a timeout gets here; the principal
		// stage has checked the name. A cap that cannot decide admits,
		// as a ban check does: an outage must not lock everyone out.
		return interceptor.Continue()
	}
	if !d.Allowed && p.displace && d.Store == StoreMemory {
		// This instance decided alone: the slot of its own oldest
		// session of the principal passes to the new one.
		if old, ok := p.takeOldest(name, s); ok {
			p.limiter.observer.Displaced(ScopePrincipal, 1)
			p.disconnect(old)
			return interceptor.Continue()
		}
	}
	if !d.Allowed {
		if d.Store == StoreNone {
			return interceptor.RejectRetry(outcome.RejectSessionCap, "too many sessions",
				"the session cap cannot be checked now; retry in a few seconds", DefaultRetryAfter)
		}
		detail := fmt.Sprintf("%q already holds %d open sessions, the most allowed; close one and retry", s.Principal.Name, p.max)
		return interceptor.RejectFrame(outcome.RejectSessionCap, "too many sessions", detail)
	}
	p.mu.Lock()
	p.leases[s] = lease
	p.admitted[name] = append(p.admitted[name], s)
	p.mu.Unlock()
	for _, id := range displaced {
		if id != "" && id != s.ID {
			p.disconnect(id)
		}
	}
	return interceptor.Continue()
}

// takeOldest hands the slot of the principal's oldest session here to s
// and returns the old session's id; the old session's end then releases
// nothing. ok is false when this instance holds no session of name.
func (p *PrincipalStage) takeOldest(name string, s *interceptor.Session) (id string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.admitted[name]
	if len(list) == 0 {
		return "", false
	}
	old := list[0]
	p.leases[s] = p.leases[old]
	delete(p.leases, old)
	p.admitted[name] = append(list[1:], s)
	return old.ID, true
}

// SessionClosed gives back the slot s took, if any.
func (p *PrincipalStage) SessionClosed(s *interceptor.Session) {
	p.mu.Lock()
	lease, ok := p.leases[s]
	delete(p.leases, s)
	if s.Principal != nil {
		p.forgetLocked(s.Principal.Name, s)
	}
	p.mu.Unlock()
	if ok {
		p.limiter.Release(lease)
	}
}

// forgetLocked drops s from the admission list of name.
func (p *PrincipalStage) forgetLocked(name string, s *interceptor.Session) {
	list := p.admitted[name]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(p.admitted, name)
	} else {
		p.admitted[name] = list
	}
}
