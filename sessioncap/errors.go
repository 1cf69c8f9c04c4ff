package sessioncap

import (
	"errors"
	"fmt"
)

// ErrEmptyKey is returned by Acquire for an empty key.
var ErrEmptyKey = errors.New("sessioncap: empty key")

// ErrInvalidMax is returned by Acquire for a cap below 1.
var ErrInvalidMax = errors.New("sessioncap: max must be at least 1")

// ErrInvalidConfig is matched, with errors.Is, by every error a
// constructor returns for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("sessioncap: invalid configuration")

// configError names a bad setting and unwraps to ErrInvalidConfig.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func (e *configError) Unwrap() error { return ErrInvalidConfig }

// configErrorf builds a configError; format starts with the setting's name.
func configErrorf(format string, args ...any) error {
	return &configError{msg: "sessioncap: " + fmt.Sprintf(format, args...)}
}
