//go:build !unix

package testredis

import (
	"errors"
	"fmt"
	"runtime"
)

// pauseProcess fails: stopping a process that keeps its sockets open
// needs Unix signals.
func pauseProcess(pid int, pause bool) error {
	return fmt.Errorf("not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
