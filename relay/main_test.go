package relay

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// relay goroutine, Redis connection and client must end with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, stomptest.IgnoreUnsubscribeWaiter)
}
