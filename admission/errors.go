package admission

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched, with errors.Is, by every error New and
// Middleware return for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("admission: invalid configuration")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "admission: ", format, args...)
}
