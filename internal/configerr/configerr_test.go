package configerr

import (
	"errors"
	"testing"
)

func TestErrorf(t *testing.T) {
	errBad := errors.New("pkg: invalid configuration")
	err := Errorf(errBad, "pkg: ", "Window %v is negative", "-1s")
	if got, want := err.Error(), "pkg: Window -1s is negative"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, errBad) {
		t.Errorf("errors.Is(err, sentinel) = false")
	}
	p := Prefixed(errBad, "file x: ", err)
	if got, want := p.Error(), "file x: pkg: Window -1s is negative"; got != want || !errors.Is(p, errBad) {
		t.Errorf("Prefixed = %q (Is %v), want %q matching the sentinel", got, errors.Is(p, errBad), want)
	}
	if Prefixed(errBad, "x", nil) != nil {
		t.Errorf("Prefixed(nil) is not nil")
	}
}
