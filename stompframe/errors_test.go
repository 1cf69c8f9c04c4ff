package stompframe

import (
	"errors"
	"fmt"
	"testing"
)

func TestProtocolError(t *testing.T) {
	t.Parallel()
	pe := protocolError(ErrFrameTooLarge, "frame is larger than 10 bytes")
	if pe.Message != "frame too large" {
		t.Errorf("Message = %q, want %q", pe.Message, "frame too large")
	}
	if got, want := pe.Error(), "stompframe: frame too large: frame is larger than 10 bytes"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("session 7: %w", pe)
	if !errors.Is(wrapped, ErrFrameTooLarge) {
		t.Errorf("errors.Is(wrapped, ErrFrameTooLarge) = false, want true")
	}
	if got, ok := AsProtocolError(wrapped); !ok || got != pe {
		t.Errorf("AsProtocolError(wrapped) = %v, %v, want %v, true", got, ok, pe)
	}
	if _, ok := AsProtocolError(errors.New("other")); ok {
		t.Errorf("AsProtocolError(other) ok = true, want false")
	}
	if got, want := (&ProtocolError{Message: "x"}).Error(), "stompframe: x"; got != want {
		t.Errorf("Error() without Err = %q, want %q", got, want)
	}
}
