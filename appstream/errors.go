package appstream

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is wrapped by every error New return for a bad
// setting; the message names the setting and its value.
var ErrInvalidConfig = errors.New("appstream: invalid configuration")

// configErrorf reports a bad setting; format starts with its name and
// value.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "appstream: ", format, args...)
}
