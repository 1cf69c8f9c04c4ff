package reconnect

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrEmptyKey is returned by Count for an empty key.
var ErrEmptyKey = errors.New("reconnect: empty key")

// ErrInvalidConfig is matched, with errors.Is, by every error a
// constructor returns for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("reconnect: invalid configuration")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "reconnect: ", format, args...)
}
