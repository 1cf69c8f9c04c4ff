package history

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidConfig is matched (errors.Is) by every error a constructor
// returns for an unusable Config.
var ErrInvalidConfig = errors.New("history: invalid config")

// ErrInvalidStart is wrapped by ParseStart's errors: the SUBSCRIBE's
// position headers do not parse.
var ErrInvalidStart = errors.New("history: invalid position")

// ErrClosed is returned by a store's methods after Close.
var ErrClosed = errors.New("history: closed")

// ErrEmptyDestination is returned for an empty destination.
var ErrEmptyDestination = errors.New("history: empty destination")

// ErrTooLarge is returned by Append for data longer than the store's
// MaxEntryBytes.
var ErrTooLarge = errors.New("history: entry too large")

// configErrorf reports a bad setting; format starts with its name.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "history: ", format, args...)
}
