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
// RedisConfig.MaxQueue decisions are already waiting for a pipeline: the
// server has more decisions in hand than it sends, and the decision is
// better made without Redis than after a long wait. It is this server's
// backlog, not a Redis failure.
var ErrQueueFull = errors.New("handshake: redis decision queue full")

// ErrQueueWait is wrapped by the error of RedisStore.Allow when a decision
// waited RedisConfig.MaxQueueWait in the queue without being sent. Like
// ErrQueueFull it says nothing about Redis.
var ErrQueueWait = errors.New("handshake: redis decision waited too long to be sent")

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
