package nginx

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched, with errors.Is, by every error Render returns
// for a bad Config setting, or for a policy that cannot be laid out with
// that Config (a policy route on WSPath sent to the API). The message names
// the setting and its value: `nginx: ReadTimeout 5s must exceed HeartBeat
// 10s`. An invalid policy is reported with the policy package's own error,
// which matches policy.ErrInvalid.
var ErrInvalidConfig = errors.New("nginx: invalid configuration")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "nginx: ", format, args...)
}
