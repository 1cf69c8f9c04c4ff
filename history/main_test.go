package history

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fixed instant of the step tables.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
