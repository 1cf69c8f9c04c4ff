package web

import (
	"strings"

	"github.com/stompgate/stompgate/interceptor"
)

// DefaultWSPath is the WebSocket endpoint the page connects to when
// Config.WSPath is empty: the server's default -ws-path.
const DefaultWSPath = "/ws"

// Config configures Handler. The zero value works: a page that connects to
// /ws and a counts endpoint that knows no session.
type Config struct {
	// Counts returns the frame accounting of the open session with the
	// given id (the CONNECTED frame's session header) and whether such a
	// session is open; server.Server.SessionCounts fits. Nil: every id is
	// unknown and the counts endpoint answers 404.
	Counts func(id string) (interceptor.Counts, bool)
	// WSPath is the URL path of the STOMP WebSocket endpoint on the same
	// host, told to the page in a <meta> tag. Default DefaultWSPath; a
	// path without a leading '/' gets one.
	WSPath string
	// Presence tells the page that its rooms (/topic/room.<name>) keep
	// presence, so that it lists who is in the room it joined. False: it
	// lists no one and never subscribes to /presence.
	Presence bool
}

// withDefaults returns a copy of c with every zero field set to its
// default.
func (c Config) withDefaults() Config {
	switch {
	case c.WSPath == "":
		c.WSPath = DefaultWSPath
	case !strings.HasPrefix(c.WSPath, "/"):
		c.WSPath = "/" + c.WSPath
	}
	return c
}
