package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	tests := []struct{ in, want string }{
		{"session closed", "session closed"},
		{"GET /ws?access_token=abc.def&x=1", "GET /ws?access_token=REDACTED&x=1"},
		{`origin "http://h/?ACCESS_TOKEN=abc"`, `origin "http://h/?ACCESS_TOKEN=REDACTED"`},
		{"passcode " + jwt + " refused", "passcode REDACTED refused"},
		{"/ws?access_token=" + jwt, "/ws?access_token=REDACTED"},
		{"eyJ alone is no token", "eyJ alone is no token"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Every place a value can reach a log line goes through the filter: the
// message, string, error and grouped attributes, and attributes added
// with With.
func TestTokens(t *testing.T) {
	var buf bytes.Buffer
	l := Tokens(slog.New(slog.NewJSONHandler(&buf, nil)))
	l = l.With("url", "/ws?access_token=with-attr")
	l.WithGroup("g").Info("GET /ws?access_token=in-message",
		"s", "access_token=in-string",
		"err", errors.New("parse access_token=in-error"),
		slog.Group("grp", "v", "access_token=in-group"),
		"n", 42)
	out := buf.String()
	for _, leak := range []string{"with-attr", "in-message", "in-string", "in-error", "in-group"} {
		if strings.Contains(out, leak) {
			t.Errorf("log shows %q: %s", leak, out)
		}
	}
	if n := strings.Count(out, "access_token=REDACTED"); n != 5 {
		t.Errorf("%d redactions, want 5: %s", n, out)
	}
	if !strings.Contains(out, `"n":42`) {
		t.Errorf("a number attribute was changed: %s", out)
	}
}
