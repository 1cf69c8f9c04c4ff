package interceptor

// Closer is implemented by a stage that holds something for a session
// beyond the frame it is handling: a slot in a per-principal session cap,
// a subscription in an external system. The server calls
// Chain.SessionClosed once when the session ends, whatever ended it, and
// the chain passes it to every stage that implements Closer.
type Closer interface {
	// SessionClosed releases what the stage holds for s. It is called on
	// the session's own goroutine after the last frame was handled; it
	// must not block for long.
	SessionClosed(s *Session)
}

// SessionClosed tells every stage that implements Closer that s has
// ended, in chain order.
func (c *Chain) SessionClosed(s *Session) {
	for _, st := range c.stages {
		if cl, ok := st.(Closer); ok {
			cl.SessionClosed(s)
		}
	}
}
