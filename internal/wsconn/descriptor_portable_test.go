//go:build !linux || wsconn_portable

package wsconn

import (
	"errors"
	"fmt"
	"testing"
)

// TestTryWriteReservedOnNetConn: with no descriptor to write without
// waiting, TryWriteReserved writes nothing and returns ErrWouldWait, and
// the connection is as it was: the same message then goes out whole
// with WriteReserved, and nothing of the refused try reaches the client.
func TestTryWriteReservedOnNetConn(t *testing.T) {
	t.Parallel()
	srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
		buf := append(make([]byte, MaxHeaderLen), "tried"...)
		if sent, err := c.TryWriteReserved(MessageText, buf); sent || !errors.Is(err, ErrWouldWait) {
			return fmt.Errorf("TryWriteReserved = %v, %v; want false, ErrWouldWait", sent, err)
		}
		buf = append(make([]byte, MaxHeaderLen), "written"...)
		return c.WriteReserved(MessageText, buf)
	}})
	c := dial(t, srv.addr)
	c.expect(serverFrame(finBit|fText, []byte("written")))
	_ = c.nc.Close()
	if o := srv.next(t); o.beside != nil {
		t.Error(o.beside)
	}
}
