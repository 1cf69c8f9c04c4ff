// Package redact keeps bearer tokens out of logs: a slog handler that
// rewrites JWTs and access_token parameters before a line is written,
// wherever in the line they appear.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Tokens must never reach a log: an access_token query parameter (in a
// URL some error message repeats), or anything shaped like a JWT (three
// base64url parts, the first one a JSON object: "eyJ").
var (
	accessTokenParam = regexp.MustCompile(`(?i)(access_token=)[^&\s"'\\]*`)
	jwtShape         = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`)
)

// Tokens returns a logger that writes what l writes, with tokens
// replaced by "REDACTED" in the message and in every string, error and
// Stringer attribute. Log lines are state changes, not per-frame events,
// so the scan costs nothing that matters; a line with neither
// "access_token" nor "eyJ" in it is passed through unchanged.
func Tokens(l *slog.Logger) *slog.Logger {
	return slog.New(handler{l.Handler()})
}

// String returns s with every access_token parameter's value and every
// JWT-shaped run replaced by "REDACTED".
func String(s string) string {
	if !strings.Contains(s, "eyJ") && !strings.Contains(strings.ToLower(s), "access_token") {
		return s
	}
	s = accessTokenParam.ReplaceAllString(s, "${1}REDACTED")
	return jwtShape.ReplaceAllString(s, "REDACTED")
}

// handler is the slog.Handler of Tokens.
type handler struct{ h slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = attr(a)
	}
	return handler{h.h.WithAttrs(red)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.h.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return slog.Attr{Key: a.Key, Value: v}
		}
		if red := String(s); red != s {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
