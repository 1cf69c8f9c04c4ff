//go:build !linux

package admission

import (
	"net"
	"time"
)

// deferAccept is Linux's TCP_DEFER_ACCEPT; elsewhere connections are
// handed to Accept as soon as they are established, and a refusal
// written at accept may reach a client before it sent its request.
func deferAccept(net.Listener, time.Duration) bool { return false }
