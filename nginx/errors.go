package nginx

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is matched, with errors.Is, by every error Render returns
// for a bad Config setting, or for a policy that cannot be laid out with
// that Config (a policy route on WSPath sent to the API). The message names
// the setting and its value: `nginx: ReadTimeout 5s must exceed HeartBeat
// 10s`. An invalid policy is reported with the policy package's own error,
// which matches policy.ErrInvalid.
var ErrInvalidConfig = errors.New("nginx: invalid configuration")

// configError carries a message that names the bad setting and unwraps to
// ErrInvalidConfig without repeating its text.
type configError struct {
	msg string
}

func (e *configError) Error() string { return e.msg }

func (e *configError) Unwrap() error { return ErrInvalidConfig }

// configErrorf builds a configError; format should start with the setting's
// name.
func configErrorf(format string, args ...any) error {
	return &configError{msg: "nginx: " + fmt.Sprintf(format, args...)}
}
