package policy

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched, with errors.Is, by every error that reports a bad
// rate, zone, route or policy document: errors from ParseRate, Parse, Load
// (except a file that cannot be read) and Validate. The message of such an
// error names the zone and field at fault; ErrInvalid's own text is not part
// of it.
var ErrInvalid = errors.New("policy: invalid policy")

// invalidError carries a message that names the bad value and unwraps to
// ErrInvalid, so the message reads `policy: zone "x": burst -1 is negative`
// rather than repeating the sentinel's text.
type invalidError struct {
	msg string
}

func (e *invalidError) Error() string { return e.msg }

func (e *invalidError) Unwrap() error { return ErrInvalid }

// invalidf builds an error without the package prefix; the exported entry
// points add "policy: " (and Load the file name) once, in prefixed.
func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// prefixed returns err with prefix put in front of its message, keeping it
// matchable as ErrInvalid.
func prefixed(prefix string, err error) error {
	if err == nil {
		return nil
	}
	return &invalidError{msg: prefix + err.Error()}
}
