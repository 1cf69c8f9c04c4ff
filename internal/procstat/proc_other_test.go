//go:build !linux

package procstat

import (
	"errors"
	"os"
	"testing"
)

// TestProcUnsupported: with no /proc, CPU and RSS say so in a way a
// caller can test for.
func TestProcUnsupported(t *testing.T) {
	if _, err := CPU(os.Getpid()); !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CPU(self) error = %v, want ErrUnsupported", err)
	}
	if _, err := RSS(os.Getpid()); !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("RSS(self) error = %v, want ErrUnsupported", err)
	}
}
