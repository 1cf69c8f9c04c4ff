package stompframe

import (
	"errors"
	"strings"

	"github.com/stompgate/stompgate/internal/configerr"
)

// Sentinel errors wrapped by *ProtocolError. Test for them with errors.Is.
var (
	// ErrFrameTooLarge means a frame is, or claims in its content-length
	// header to be, larger than Limits.MaxFrameSize.
	ErrFrameTooLarge = errors.New("stompframe: frame too large")
	// ErrTooManyHeaders means a frame has more header lines than
	// Limits.MaxHeaders.
	ErrTooManyHeaders = errors.New("stompframe: too many headers")
	// ErrHeaderLineTooLong means a command or header line is longer than
	// Limits.MaxHeaderLine.
	ErrHeaderLineTooLong = errors.New("stompframe: header line too long")
	// ErrBadEscape means a header holds an escape sequence that the
	// frame's version does not define, such as \t, or ends in a lone
	// backslash. STOMP 1.2 (Value Encoding) makes this a fatal error.
	ErrBadEscape = errors.New("stompframe: undefined escape sequence")
	// ErrInvalidUTF8 means a command or header line is not valid UTF-8.
	// STOMP 1.2 (Value Encoding) makes commands and headers UTF-8, and a
	// server must not pass other bytes on: a browser fails the whole
	// WebSocket on a text message that is not UTF-8.
	ErrInvalidUTF8 = errors.New("stompframe: invalid UTF-8")
	// ErrMalformed means the input does not follow the frame grammar: an
	// empty command or one with characters other than A-Z, a header line
	// without a colon or with an empty name or a raw CR, a content-length
	// that is not a decimal number, a content-length body not followed by
	// NUL, or a CR not followed by LF between frames.
	ErrMalformed = errors.New("stompframe: malformed frame")
)

// ProtocolError is a decoding failure. The server answers it with an ERROR
// frame and closes the session; the Decoder that returned it is unusable.
type ProtocolError struct {
	// Message is a short summary ("frame too large"), fit for the message
	// header of an ERROR frame: one line, no colon escaping needed.
	Message string
	// Detail says what exactly was wrong, for the body of the ERROR frame.
	// It quotes no more of the input than a single byte.
	Detail string
	// Err is the sentinel this error wraps, such as ErrFrameTooLarge.
	Err error
}

// Error returns the sentinel's text followed by the detail.
func (e *ProtocolError) Error() string {
	s := "stompframe: " + e.Message
	if e.Err != nil {
		s = e.Err.Error()
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel, so that errors.Is(err, ErrMalformed) works.
func (e *ProtocolError) Unwrap() error { return e.Err }

// AsProtocolError reports whether err is or wraps a *ProtocolError and
// returns it.
func AsProtocolError(err error) (*ProtocolError, bool) {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// protocolError builds a *ProtocolError whose Message is the sentinel's
// text without the package prefix.
func protocolError(sentinel error, detail string) *ProtocolError {
	return &ProtocolError{
		Message: strings.TrimPrefix(sentinel.Error(), "stompframe: "),
		Detail:  detail,
		Err:     sentinel,
	}
}

// ErrInvalidConfig is wrapped by every error Limits.Validate returns; the
// message names the limit and its value.
var ErrInvalidConfig = errors.New("stompframe: invalid configuration")

// configErrorf reports a bad setting; format starts with its name and
// value.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "stompframe: ", format, args...)
}
