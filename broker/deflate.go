package broker

import (
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/stompframe"
)

// deflated returns the shared part of the MESSAGE frame for v compressed
// as a permessage-deflate message at level, made by the first caller
// and shared by every later one. Concurrent callers wait for the first,
// so each message is compressed at most once per STOMP version however
// many connections write it. A message is compressed at one level, the
// server's: a later call with another level gets the first encoding.
func (m *Message) deflated(v stompframe.Version, level int) []byte {
	i := versionIndex(v)
	if p := m.ztail[i].Load(); p != nil {
		return *p
	}
	m.zmu.Lock()
	defer m.zmu.Unlock()
	if p := m.ztail[i].Load(); p != nil {
		return *p
	}
	t := m.tail[i]
	if t == nil {
		// A redirected copy, or a version the message was not
		// published to: encode the tail only to compress it.
		t = m.appendTail(make([]byte, 0, m.tailLen(v)+tailSlack), v)
	}
	z := wsconn.AppendDeflated(make([]byte, 0, len(t)/2+64), t, level)
	if cap(z) > len(z)+tailSlack {
		z = append(make([]byte, 0, len(z)), z...)
	}
	if deflateHook != nil {
		deflateHook()
	}
	m.ztail[i].Store(&z)
	return z
}

// deflateHook, when set by a test, runs at each compression of a tail.
var deflateHook func()

// maxStoredHead bounds the subscription and ack lines AppendDeflatedFrame
// copies through a buffer on the stack; longer ones go in two stored
// blocks.
const maxStoredHead = 256

// AppendDeflatedFrame appends sub's MESSAGE frame to dst as one
// permessage-deflate message without context takeover (RFC 7692 section
// 7.2.1) and returns the extended slice: the lines that differ per
// subscriber (subscription, ack) as a stored block, then the shared part
// of the frame compressed at level (1 to 9), once for every subscriber of
// sub's STOMP version (see wsconn.AppendStored, wsconn.AppendDeflated).
// The result may be followed by wsconn.AppendSyncFlush and the next
// frame's encoding within one message. It is safe to call from several
// goroutines at once; every call on one message must use the same level.
func (m *Message) AppendDeflatedFrame(dst []byte, sub *Subscription, level int) []byte {
	var hb [maxStoredHead]byte
	h := append(hb[:0], sub.head...)
	if sub.Ack != AckAuto && sub.Version >= stompframe.V12 {
		if len(h)+len("ack:\n")+len(m.ID) > len(hb) {
			dst = wsconn.AppendStored(dst, h)
			h = hb[:0]
		}
		h = append(h, "ack:"...)
		h = append(h, m.ID...)
		h = append(h, '\n')
	}
	dst = wsconn.AppendStored(dst, h)
	return append(dst, m.deflated(sub.Version, level)...)
}
