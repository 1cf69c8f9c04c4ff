package metrics

import "errors"

// ErrInvalidConfig is matched (with errors.Is) by every error New returns
// for a Config it cannot use. The error's own message names the setting and
// the offending value.
var ErrInvalidConfig = errors.New("metrics: invalid config")

// ErrRegister is matched (with errors.Is) by the error New returns when the
// registerer refuses one of the collectors, most often because a Metrics was
// already built on the same registry. The underlying
// prometheus.AlreadyRegisteredError is reachable with errors.As.
var ErrRegister = errors.New("metrics: cannot register collector")

// configError carries a message that names the setting at fault and
// unwraps to ErrInvalidConfig, so the message does not repeat the sentinel.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

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
