package streams

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched (errors.Is) by every error New and
// NewPublisher return for an unusable configuration.
var ErrInvalidConfig = errors.New("streams: invalid config")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "streams: ", format, args...)
}
