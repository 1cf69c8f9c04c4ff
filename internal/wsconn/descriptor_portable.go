//go:build !linux || wsconn_portable

package wsconn

// The portable path: every read and write goes through the net.Conn, as
// on a connection with no descriptor (TLS, net.Pipe) on Linux. What it
// gives up against the raw path in descriptor_linux.go: a reader waiting
// for input holds its pooled buffer, and TryWriteReserved, which cannot
// write without risking a wait, writes nothing and returns ErrWouldWait,
// leaving the message to a writer that may wait.

// useDescriptor leaves c on net.Conn: c.rc stays nil.
func (c *Conn) useDescriptor() {}
