package clientip

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is wrapped by the errors of ParseTrustedProxies; the
// message names the setting and its value.
var ErrInvalidConfig = errors.New("clientip: invalid configuration")

// configErrorf formats an ErrInvalidConfig error; format should name the
// setting and its value.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "clientip: ", format, args...)
}
