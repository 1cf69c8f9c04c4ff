// Package configerr is the one shape of a bad-setting error across
// stompgate's packages. A package exports a sentinel (ErrInvalidConfig,
// policy.ErrInvalid) and builds its errors here: the message is complete
// on its own, names the setting and its value after the package's prefix
// ("relay: PingInterval -1s is negative"), and errors.Is matches the
// sentinel without its text being repeated in the message.
package configerr

import "fmt"

// Error is a bad setting. It unwraps to the sentinel it was built with.
type Error struct {
	msg  string
	kind error
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.kind }

// Errorf returns an *Error of kind whose message is prefix followed by
// the formatted text.
func Errorf(kind error, prefix, format string, args ...any) error {
	return &Error{msg: prefix + fmt.Sprintf(format, args...), kind: kind}
}

// Prefixed returns err with prefix put in front of its message, still
// matching kind; nil stays nil.
func Prefixed(kind error, prefix string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{msg: prefix + err.Error(), kind: kind}
}
