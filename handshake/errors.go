package handshake

import (
	"errors"
	"fmt"
)

// ErrInvalidLimit is wrapped by every error that Limit.Validate returns; the
// message says which field is wrong and why.
var ErrInvalidLimit = errors.New("handshake: invalid limit")

// ErrEmptyKey is returned when a decision or a ban is asked for an empty
// key. An empty key would put every caller into one shared bucket.
var ErrEmptyKey = errors.New("handshake: empty key")

// ErrQueueFull is wrapped by the error of RedisStore.Allow when
// RedisConfig.MaxQueue decisions are already waiting for a pipeline: Redis
// is not keeping up, and the decision is better made without it than after
// the handshake's Timeout.
var ErrQueueFull = errors.New("handshake: redis decision queue full")

// ErrInvalidConfig is wrapped by the errors of NewMemoryStore, NewRedisStore,
// New, Middleware and the flag parsers; the message names the setting and
// its value.
var ErrInvalidConfig = errors.New("handshake: invalid configuration")

// settingError is an error about one setting: its message is complete on its
// own ("handshake: MemoryConfig.MaxKeys -1 is negative") and it unwraps to
// the sentinel that classifies it, so callers can use errors.Is.
type settingError struct {
	msg  string
	kind error
}

func (e *settingError) Error() string { return e.msg }
func (e *settingError) Unwrap() error { return e.kind }

// configErrorf formats an ErrInvalidConfig error; format should name the
// setting and its value.
func configErrorf(format string, args ...any) error {
	return &settingError{msg: "handshake: " + fmt.Sprintf(format, args...), kind: ErrInvalidConfig}
}

// limitErrorf formats an ErrInvalidLimit error.
func limitErrorf(format string, args ...any) error {
	return &settingError{msg: "handshake: " + fmt.Sprintf(format, args...), kind: ErrInvalidLimit}
}
