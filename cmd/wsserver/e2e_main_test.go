package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// session, writer, heart-beat timer and client the end-to-end tests start
// must end with its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
