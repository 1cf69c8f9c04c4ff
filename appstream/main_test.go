package appstream

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// Redis client and server session must end with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
