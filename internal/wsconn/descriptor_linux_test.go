//go:build linux && !wsconn_portable

package wsconn

import (
	"fmt"
	"testing"
)

// TestTryWriteReservedKeepsTheRest writes without waiting to a client
// that does not read until the socket stops taking whole messages, then
// once more, then with Flush and WriteMessage: the client must get every
// message whole and in order, the rest kept by the connection first.
func TestTryWriteReservedKeepsTheRest(t *testing.T) {
	t.Parallel()
	const size = 16 << 10
	stalled := make(chan int, 1)
	srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
		whole := 0
		for {
			if whole > 10000 {
				return fmt.Errorf("%d messages of %d bytes all went out at once to a client that does not read", whole, size)
			}
			buf := append(make([]byte, MaxHeaderLen), pattern(size, byte(whole))...)
			sent, err := c.TryWriteReserved(MessageBinary, buf)
			if err != nil {
				return err
			}
			if !sent {
				break
			}
			whole++
		}
		// One more while the rest is held: it must queue behind it,
		// not go out in the middle of the cut message.
		buf := append(make([]byte, MaxHeaderLen), pattern(size, byte(whole+1))...)
		if sent, err := c.TryWriteReserved(MessageBinary, buf); sent || err != nil {
			return fmt.Errorf("a write behind a held rest: sent %v, %v; want kept", sent, err)
		}
		stalled <- whole
		if err := c.Flush(); err != nil {
			return err
		}
		return c.WriteMessage(MessageText, []byte("end"))
	}})
	c := dial(t, srv.addr)
	whole := <-stalled
	for i := range whole + 2 {
		c.expect(serverFrame(finBit|fBinary, pattern(size, byte(i))))
	}
	c.expect(serverFrame(finBit|fText, []byte("end")))
	_ = c.nc.Close()
	if o := srv.next(t); o.beside != nil {
		t.Error(o.beside)
	}
}
