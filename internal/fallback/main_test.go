package fallback

import (
	"testing"

	"go.uber.org/goleak"
)

// The probe and the confirmation are goroutines of the Switch: none may
// outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
