package sessioncap

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stompgate/stompgate/interceptor"
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
}

// PrincipalStage caps the sessions of each authenticated principal. At a
// CONNECT (or STOMP) whose principal the PrincipalStage before it has set
// and which is not anonymous, it takes a slot; over the cap it rejects the
// frame with interceptor.RejectSessionCap, so the session ends with ERROR
// "too many sessions". It gives the slot back in SessionClosed. Place it
// right after interceptor.PrincipalStage.
//
// Anonymous principals are not capped here: each is a fresh name per
// session, and the per-IP cap bounds them.
//
// A PrincipalStage is safe for concurrent use.
type PrincipalStage struct {
	limiter *Limiter
	max     int

	mu sync.Mutex
	// leases holds the slot of each session that took one. Guarded by mu.
	leases map[*interceptor.Session]Lease
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
	return &PrincipalStage{limiter: cfg.Limiter, max: cfg.Max, leases: make(map[*interceptor.Session]Lease)}, nil
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
	ctx, cancel := context.WithTimeout(context.Background(), DefaultAcquireTimeout)
	defer cancel()
	lease, d, err := p.limiter.Acquire(ctx, ScopePrincipal, s.Principal.Name, p.max)
	if err != nil {
		// Only an invalid name or a timeout gets here; the principal
		// stage has checked the name. A cap that cannot decide admits,
		// as a ban check does: an outage must not lock everyone out.
		return interceptor.Continue()
	}
	if !d.Allowed {
		detail := fmt.Sprintf("%q already holds %d open sessions, the most allowed; close one and retry", s.Principal.Name, p.max)
		if d.Store == StoreNone {
			detail = "the session cap cannot be checked now; retry in a few seconds"
		}
		return interceptor.RejectFrame(interceptor.RejectSessionCap, "too many sessions", detail)
	}
	p.mu.Lock()
	p.leases[s] = lease
	p.mu.Unlock()
	return interceptor.Continue()
}

// SessionClosed gives back the slot s took, if any.
func (p *PrincipalStage) SessionClosed(s *interceptor.Session) {
	p.mu.Lock()
	lease, ok := p.leases[s]
	delete(p.leases, s)
	p.mu.Unlock()
	if ok {
		p.limiter.Release(lease)
	}
}
