package policy

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrInvalid is matched, with errors.Is, by every error that reports a bad
// rate, zone, route or policy document: errors from ParseRate, Parse, Load
// (except a file that cannot be read) and Validate. The message of such an
// error names the zone and field at fault; ErrInvalid's own text is not part
// of it.
var ErrInvalid = errors.New("policy: invalid policy")

// invalidf builds an error without the package prefix, so the message
// reads `policy: zone "x": burst -1 is negative` once the exported entry
// points add "policy: " (and Load the file name) in prefixed.
func invalidf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalid, "", format, args...)
}

// prefixed returns err with prefix put in front of its message, keeping it
// matchable as ErrInvalid.
func prefixed(prefix string, err error) error {
	return configerr.Prefixed(ErrInvalid, prefix, err)
}
