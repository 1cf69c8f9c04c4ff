package redisclient

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalidURL is wrapped by the errors of New; the message names the
// URL, with its password hidden, and what is wrong with it.
var ErrInvalidURL = errors.New("redisclient: invalid Redis URL")

// urlErrorf formats an ErrInvalidURL error.
func urlErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidURL, "redisclient: ", format, args...)
}
