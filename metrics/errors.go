package metrics

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched (with errors.Is) by every error New returns
// for a Config it cannot use. The error's own message names the setting and
// the offending value.
var ErrInvalidConfig = errors.New("metrics: invalid config")

// ErrRegister is matched (with errors.Is) by the error New returns when the
// registerer refuses one of the collectors, most often because a Metrics was
// already built on the same registry. The underlying
// prometheus.AlreadyRegisteredError is reachable with errors.As.
var ErrRegister = errors.New("metrics: cannot register collector")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "metrics: ", format, args...)
}

// registerError says which metric could not be registered and unwraps both
// to ErrRegister and to the registerer's own error.
type registerError struct {
	name string
	err  error
}

func (e *registerError) Error() string {
	return "metrics: register " + e.name + ": " + e.err.Error()
}

func (e *registerError) Unwrap() []error { return []error{ErrRegister, e.err} }
