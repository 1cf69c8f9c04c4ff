package procs

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves Adapt's goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
