package handshake

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
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

// configErrorf formats an ErrInvalidConfig error; format should name the
// setting and its value ("MemoryConfig.MaxKeys -1 is negative").
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "handshake: ", format, args...)
}

// limitErrorf formats an ErrInvalidLimit error.
func limitErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidLimit, "handshake: ", format, args...)
}
