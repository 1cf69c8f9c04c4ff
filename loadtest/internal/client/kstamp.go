package client

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// A latency the tool measures is the time from a publisher's stamp to the
// moment its reader has the message: the server's work and the network,
// but also however long the kernel held the bytes before the reader ran
// (a busy or descheduled load generator). With kernel stamps on, each
// read of the connection also returns when the kernel received its last
// bytes (SO_TIMESTAMPNS on Linux), which splits that latency in two: the
// server's part, stamp to kernel arrival, and the tool's, kernel arrival
// to read.

// RecvStamps is the kernel receive time of a connection's reads.
type RecvStamps struct {
	// last is the kernel receive time of the latest read that returned
	// data, in Unix nanoseconds (CLOCK_REALTIME); 0 before the first.
	// Written by the reading goroutine, read by the same one; atomic so
	// that a probe from elsewhere is not a race.
	last atomic.Int64
}

// Last is the kernel receive time of the latest read that returned
// data: for a message read to its end, the arrival of its last bytes,
// since no message ends before the read that brings its end. ok is false
// before any stamped read, or where the platform gives none.
func (s *RecvStamps) Last() (t time.Time, ok bool) {
	if s == nil {
		return time.Time{}, false
	}
	ns := s.last.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// stampsKey carries a *stampSlot from Dial to the dial function of its
// HTTP client, which hands back the stamps of the connection it opens.
type stampsKey struct{}

// stampSlot is filled by the dial function with the connection's stamps.
type stampSlot struct{ stamps *RecvStamps }

// withStampSlot returns ctx carrying a slot for the stamps of the
// connection dialed under it.
func withStampSlot(ctx context.Context) (context.Context, *stampSlot) {
	slot := &stampSlot{}
	return context.WithValue(ctx, stampsKey{}, slot), slot
}

// stampingDial wraps dial so that, under a context with a stamp slot, the
// TCP connection it opens reports kernel receive times (where the
// platform can) and the slot receives them.
func stampingDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		slot, _ := ctx.Value(stampsKey{}).(*stampSlot)
		if slot == nil {
			return c, nil
		}
		wrapped, stamps, ok := stampConn(c)
		if !ok {
			return c, nil
		}
		slot.stamps = stamps
		return wrapped, nil
	}
}

// KernelStampsSupported reports whether this platform gives kernel
// receive times (Linux) or Dial's KernelStamps is a no-op.
const KernelStampsSupported = kernelStampsSupported

// defaultStampingClient dials for sessions with kernel stamps that come
// with no HTTP client of their own.
var defaultStampingClient = &http.Client{Transport: &http.Transport{
	DialContext: stampingDial((&net.Dialer{Timeout: DialTimeout}).DialContext),
}}
