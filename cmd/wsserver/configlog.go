package main

import (
	"flag"
	"log/slog"
	"net/url"
	"sort"
)

// secretSettings are the settings whose values never reach a log.
var secretSettings = map[string]bool{"jwt-secret": true, "api-key": true, "relay-key": true}

// urlSettings are URLs that may carry a password or a token in their
// user info or query: logged without them.
var urlSettings = map[string]bool{"redis-url": true, "app-redis-url": true, "jwt-jwks-url": true, "otel-endpoint": true}

// logConfig logs the effective configuration once at start-up: every
// setting with the value in force (flag, environment or default), secrets
// masked, so that an operator reading the log knows what this instance
// runs with.
func (s *settings) logConfig(logger *slog.Logger) {
	if s.flags == nil {
		return
	}
	var names []string
	s.flags.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	attrs := make([]any, 0, len(names))
	for _, n := range names {
		attrs = append(attrs, slog.String(n, maskSetting(n, s.flags.Lookup(n).Value.String())))
	}
	logger.Info("configuration", attrs...)
}

// maskSetting returns the loggable form of setting name's value v.
func maskSetting(name, v string) string {
	switch {
	case v == "":
		return ""
	case secretSettings[name]:
		return "(set)"
	case urlSettings[name]:
		u, err := url.Parse(v)
		if err != nil {
			return "(unparsable)"
		}
		u.RawQuery, u.Fragment = "", ""
		return u.Redacted()
	}
	return v
}
