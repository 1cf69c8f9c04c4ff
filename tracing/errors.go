package tracing

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched (errors.Is) by every error New returns for
// an unusable Config.
var ErrInvalidConfig = errors.New("tracing: invalid config")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "tracing: ", format, args...)
}
