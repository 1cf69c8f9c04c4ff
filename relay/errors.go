package relay

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched (errors.Is) by every error New returns for
// an unusable Config.
var ErrInvalidConfig = errors.New("relay: invalid config")

// ErrStarted is returned by Start when the relay was started before.
var ErrStarted = errors.New("relay: already started")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("relay: closed")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "relay: ", format, args...)
}
