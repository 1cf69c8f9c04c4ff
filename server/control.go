package server

import (
	"time"

	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// isControl reports whether f counts against the session's control-frame
// budget: a frame that changes the session's state in the broker or its
// transactions, or that makes the server write a reply. CONNECT and
// DISCONNECT happen once per session and are not counted.
func isControl(f *stompframe.Frame, receipt string) bool {
	switch f.Command {
	case stompframe.CommandSubscribe, stompframe.CommandUnsubscribe,
		stompframe.CommandBegin, stompframe.CommandCommit, stompframe.CommandAbort:
		return true
	case stompframe.CommandConnect, stompframe.CommandStomp, stompframe.CommandDisconnect:
		return false
	}
	return receipt != ""
}

// allowControl charges one control frame at now to the session's budget,
// made on its first control frame so that a session that never sends one
// holds none.
func (s *session) allowControl(now time.Time) bool {
	if s.control == nil {
		s.control = sessionlimit.NewFixedWindow(s.srv.cfg.ControlLimit, s.srv.cfg.ControlWindow)
	}
	return s.control.AllowAt(now)
}
