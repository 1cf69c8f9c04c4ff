package relay

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is matched (errors.Is) by every error New returns for
// an unusable Config.
var ErrInvalidConfig = errors.New("relay: invalid config")

// ErrStarted is returned by Start when the relay was started before.
var ErrStarted = errors.New("relay: already started")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("relay: closed")

// errMalformed reports a payload that is not in the wire format.
var errMalformed = errors.New("relay: malformed payload")

// configError is an invalid setting; it matches ErrInvalidConfig.
type configError struct{ msg string }

func (e *configError) Error() string        { return e.msg }
func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

func configErrorf(format string, args ...any) error {
	return &configError{msg: "relay: " + fmt.Sprintf(format, args...)}
}
