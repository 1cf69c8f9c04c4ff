package server

import (
	"errors"
	"io"
	"sync"
)

// readBufSize is the pooled read buffer's starting size: most STOMP frames
// from chat and game clients are well under 1 KiB, and a buffer is only
// held while a message is being handled, never by an idle session.
const readBufSize = 4 << 10

var errMessageTooLarge = errors.New("server: WebSocket message exceeds the frame size limit")

var readBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, readBufSize)
	return &b
}}

// readMessage reads one WebSocket message into a pooled buffer. It reads
// at most limit+1 bytes: one more than the limit is enough to know the
// message is too large, and nothing beyond is ever buffered.
func readMessage(r io.Reader, limit int) (*[]byte, error) {
	bp := readBufPool.Get().(*[]byte)
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				*bp = b
				return bp, errMessageTooLarge
			}
			grow := min(max(2*cap(b), readBufSize), limit+1)
			nb := make([]byte, len(b), grow)
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			*bp = b
			return bp, errMessageTooLarge
		}
		if err == io.EOF {
			*bp = b
			return bp, nil
		}
		if err != nil {
			*bp = b
			return bp, err
		}
	}
}

// putReadBuf returns a buffer to the pool unless it grew large: a rare big
// frame must not leave big buffers behind.
func putReadBuf(bp *[]byte) {
	if cap(*bp) > 4*readBufSize {
		return
	}
	*bp = (*bp)[:0]
	readBufPool.Put(bp)
}
