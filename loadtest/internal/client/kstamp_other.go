//go:build !linux

package client

import "net"

const kernelStampsSupported = false

// stampConn leaves c as it is: this platform gives no kernel receive
// time through the standard library.
func stampConn(c net.Conn) (net.Conn, *RecvStamps, bool) { return c, nil, false }
