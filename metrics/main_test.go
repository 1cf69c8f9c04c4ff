package metrics

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (registry
// gathering and promtool runs start some).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
