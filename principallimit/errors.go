package principallimit

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched, with errors.Is, by every error a
// constructor returns for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("principallimit: invalid configuration")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "principallimit: ", format, args...)
}
