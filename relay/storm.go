package relay

import "time"

// storm is a run of lost subscriptions, from the first group lost until
// every channel is live again. It is logged once when it starts (Warn,
// after the control pass that found the first losses, so that the line
// counts all of them) and once when it ends (Info): a slot move that
// unsubscribes hundreds of channels is two lines, not hundreds. It is
// owned by the control goroutine.
type storm struct {
	active bool
	logged bool
	since  time.Time
	reason string
	// groups counts the group connections replaced during the storm.
	groups int
}

// lost records a group lost for reason.
func (st *storm) lost(reason string) {
	if !st.active {
		*st = storm{active: true, since: time.Now(), reason: reason}
	}
	st.groups++
}

// update logs the storm's start once, and its end when no group is lost
// any more.
func (st *storm) update(r *Relay, s *subs) {
	if !st.active {
		return
	}
	lost, down := 0, 0
	for _, g := range s.groups {
		if g.lost {
			lost++
			down += g.down()
		}
	}
	if !st.logged {
		st.logged = true
		r.cfg.Logger.Warn("relay: subscriptions lost, subscribing again; messages from other instances on these channels are dropped meanwhile",
			"reason", st.reason, "groups", lost, "channels", down)
	}
	if lost == 0 {
		st.active = false
		r.cfg.Logger.Info("relay: subscriptions restored",
			"groups", st.groups, "subscribed", len(s.subscribed), "took", time.Since(st.since).Round(time.Millisecond))
	}
}
