package tracing

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (the
// batch processor's, an exporter's HTTP connections).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
