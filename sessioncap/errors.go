package sessioncap

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrEmptyKey is returned by Acquire for an empty key.
var ErrEmptyKey = errors.New("sessioncap: empty key")

// ErrInvalidMax is returned by Acquire for a cap below 1.
var ErrInvalidMax = errors.New("sessioncap: max must be at least 1")

// ErrInvalidConfig is matched, with errors.Is, by every error a
// constructor returns for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("sessioncap: invalid configuration")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "sessioncap: ", format, args...)
}
