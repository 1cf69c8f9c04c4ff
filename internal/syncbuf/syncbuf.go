// Package syncbuf is a bytes.Buffer that several goroutines may write and
// read at once: the destination of a logger or a child process's output
// that a test reads while it is still being written.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. The
// zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
