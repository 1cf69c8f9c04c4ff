package sessionlimit

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is the sentinel every configuration error wraps, so a
// caller can tell a bad setting from other failures with errors.Is.
var ErrInvalidConfig = errors.New("sessionlimit: invalid config")

// configErrorf reports a bad setting; format starts with its name and
// value ("Window -1s is negative").
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "sessionlimit: ", format, args...)
}
