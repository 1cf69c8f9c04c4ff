// Package randid makes the random identifiers the server hands out or
// keys state by: session ids, message-id prefixes, instance ids. They are
// base32 without padding (letters and digits, safe in STOMP headers, URLs
// and Redis keys) and come from crypto/rand, so one seen by nobody else
// cannot be guessed and two instances never pick the same.
package randid

import (
	"crypto/rand"
	"encoding/base32"
)

var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// New returns an identifier of n random bytes: 8n/5 characters, rounded
// up. crypto/rand.Read never fails on the platforms Go supports.
func New(n int) string {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	return encoding.EncodeToString(raw)
}
