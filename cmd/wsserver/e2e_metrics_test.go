package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestMetricsScrapeScriptedSession scrapes /metrics around one scripted
// session (CONNECT, a burst of 30 SEND with a limit of 20, DISCONNECT)
// and checks the exact deltas it caused.
func TestMetricsScrapeScriptedSession(t *testing.T) {
	const limit, burst = 20, 30
	// A window of an hour: a burst on a loaded machine must not straddle
	// a window edge, or more than the limit would pass.
	base, _ := startApp(t, "-send-limit", "20", "-send-window", "1h")

	// Another session open throughout, so that the active-session gauge is
	// seen to return to a non-zero value, not merely to fall to zero.
	_ = dialStomp(t, wsURL(base))
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)["stompgate_sessions_active"]; got != 1 {
			return fmt.Errorf("sessions active: got %v, want 1", got)
		}
		return nil
	})
	before := scrape(t, base)

	c := dialStomp(t, wsURL(base))
	for i := range burst {
		if err := c.Send("/topic/e2e.metrics", "text/plain", []byte(fmt.Sprint("m", i))); err != nil {
			t.Fatalf("SEND %d: %v", i, err)
		}
	}
	// DISCONNECT waits for its RECEIPT, which the server sends after the
	// frames before it.
	disconnect(t, c)

	// A scrape gathers the collectors concurrently, so one can see the
	// active gauge fall before it sees the close counted: wait for both.
	var after samples
	waitFor(t, clientTimeout, func() error {
		after = scrape(t, base)
		if got, want := after["stompgate_sessions_active"], before["stompgate_sessions_active"]; got != want {
			return fmt.Errorf("sessions active: got %v, want %v as before the session", got, want)
		}
		if got := after.sum("stompgate_sessions_closed_total") - before.sum("stompgate_sessions_closed_total"); got != 1 {
			return fmt.Errorf("sessions closed, summed over reasons: got delta %v, want 1", got)
		}
		return nil
	})

	delta := func(key string) float64 { return after[key] - before[key] }
	for _, tc := range []struct {
		key  string
		want float64
	}{
		{`stompgate_frames_received_total{command="SEND"}`, burst},
		{`stompgate_frames_passed_total{command="SEND"}`, limit},
		{`stompgate_frames_dropped_total{command="SEND",reason="rate_limit"}`, burst - limit},
		{`stompgate_frames_received_total{command="CONNECT"}`, 1},
		{`stompgate_frames_passed_total{command="CONNECT"}`, 1},
		{`stompgate_frames_received_total{command="DISCONNECT"}`, 1},
		{`stompgate_frames_passed_total{command="DISCONNECT"}`, 1},
		{`stompgate_sessions_opened_total`, 1},
		{`stompgate_sessions_closed_total{reason="normal"}`, 1},
		{`stompgate_handshakes_total{result="accepted"}`, 1},
	} {
		if got := delta(tc.key); got != tc.want {
			t.Errorf("%s: got delta %v, want %v", tc.key, got, tc.want)
		}
	}
	received := after.sum("stompgate_frames_received_total") - before.sum("stompgate_frames_received_total")
	passed := after.sum("stompgate_frames_passed_total") - before.sum("stompgate_frames_passed_total")
	dropped := after.sum("stompgate_frames_dropped_total") - before.sum("stompgate_frames_dropped_total")
	if dropped != burst-limit {
		t.Errorf("frames dropped, summed over labels: got delta %v, want %v", dropped, burst-limit)
	}
	if received != passed+dropped {
		t.Errorf("frames: received %v, want passed %v + dropped %v = %v", received, passed, dropped, passed+dropped)
	}
	if got := delta(`stompgate_frames_dropped_total{command="SEND",reason="rejected"}`); got != 0 {
		t.Errorf("SEND frames dropped as rejected: got delta %v, want 0", got)
	}
	if got := after.sum("stompgate_messages_delivered_total") - before.sum("stompgate_messages_delivered_total"); got != 0 {
		t.Errorf("messages delivered with no subscriber: got delta %v, want 0", got)
	}
}

// TestSettingErrors runs the program with one bad setting at a time: it
// must refuse to start with an error that names the setting, as a flag or
// as its environment variable.
func TestSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"negative frame size", []string{"-max-frame-size", "-1"}, nil, "-max-frame-size"},
		{"unknown limiter algorithm", []string{"-send-limit-algorithm", "nope"}, nil, "-send-limit-algorithm"},
		{"unknown limiter failure mode", []string{"-limiter-fail", "maybe"}, nil, "-limiter-fail"},
		{"unknown log level", []string{"-log-level", "loud"}, nil, "-log-level"},
		{"unknown log format", []string{"-log-format", "xml"}, nil, "-log-format"},
		{"send limit not a number in env", nil, map[string]string{"WSSERVER_SEND_LIMIT": "abc"}, "WSSERVER_SEND_LIMIT"},
		{"window not a duration in env", nil, map[string]string{"WSSERVER_SEND_WINDOW": "soon"}, "WSSERVER_SEND_WINDOW"},
		{"adaptive procs not a boolean in env", nil, map[string]string{"WSSERVER_ADAPTIVE_PROCS": "sometimes"}, "WSSERVER_ADAPTIVE_PROCS"},
		{"zero send limit", []string{"-send-limit", "0"}, nil, "-send-limit"},
		{"zero send window", []string{"-send-window", "0s"}, nil, "-send-window"},
		{"zero send limit in env", nil, map[string]string{"WSSERVER_SEND_LIMIT": "0"}, "send-limit"},
		{"negative abuse drops", []string{"-abuse-drops", "-1"}, nil, "-abuse-drops"},
		{"auth without secret", []string{"-auth-required"}, nil, "-auth-required"},
		{"bad trusted proxy", []string{"-trusted-proxies", "not-a-cidr"}, nil, "trusted-prox"},
		{"missing policy file", []string{"-policy", "/nonexistent/policy.yaml"}, nil, "-policy"},
		{"unknown limited command", []string{"-limited-commands", "SHOUT"}, nil, "-limited-commands"},
		{"bad redis URL", []string{"-redis-url", "http://localhost"}, nil, "redis"},
		{"unknown flag", []string{"-no-such-flag"}, nil, "no-such-flag"},
		{"negative header count", []string{"-max-headers", "-1"}, nil, "-max-headers"},
		{"negative header line", []string{"-max-header-line", "-1"}, nil, "-max-header-line"},
		{"negative subscriptions", []string{"-max-subscriptions", "-1"}, nil, "-max-subscriptions"},
		{"negative outbound queue", []string{"-outbound-queue", "-1"}, nil, "-outbound-queue"},
		{"negative connect timeout", []string{"-connect-timeout", "-1s"}, nil, "-connect-timeout"},
		{"negative write timeout", []string{"-write-timeout", "-1s"}, nil, "-write-timeout"},
		{"negative heart-beat tolerance", []string{"-heart-beat-tolerance", "-1s"}, nil, "-heart-beat-tolerance"},
		{"zero abuse window", []string{"-abuse-window", "0s"}, nil, "-abuse-window"},
		{"negative abuse ban", []string{"-abuse-ban", "-1s"}, nil, "-abuse-ban"},
		{"empty WebSocket path", []string{"-ws-path", ""}, nil, "-ws-path"},
		{"relative WebSocket path", []string{"-ws-path", "ws"}, nil, "-ws-path"},
		{"WebSocket path with a space", []string{"-ws-path", "/ws path"}, nil, "-ws-path"},
		{"WebSocket path with a brace", []string{"-ws-path", "/ws/{id"}, nil, "-ws-path"},
		{"unknown algorithm in env", nil, map[string]string{"WSSERVER_SEND_LIMIT_ALGORITHM": "nope"}, "send-limit-algorithm"},
		{"zero heart-beat tolerance", []string{"-heart-beat-tolerance", "0s"}, nil, "-heart-beat-tolerance"},
		{"zero heart-beat bound", []string{"-max-heart-beat", "0s"}, nil, "-max-heart-beat"},
		{"compression level above 9", []string{"-compression-level", "10"}, nil, "-compression-level"},
		{"compression level 0 in env", nil, map[string]string{"WSSERVER_COMPRESSION_LEVEL": "0"}, "compression-level"},
		{"negative compression minimum size", []string{"-compression-min-size", "-1"}, nil, "-compression-min-size"},
		{"heart-beat bound below the server's", []string{"-max-heart-beat", "5s", "-heart-beat-receive", "10s"}, nil, "-max-heart-beat"},
		{"negative heart-beat send", []string{"-heart-beat-send", "-1s"}, nil, "-heart-beat-send"},
		{"negative heart-beat receive in env", nil, map[string]string{"WSSERVER_HEART_BEAT_RECEIVE": "-5s"}, "heart-beat-receive"},
		{"origin pattern that is not a pattern", []string{"-allowed-origins", "good.example,["}, nil, "-allowed-origins"},
		{"frame size too small for a CONNECT", []string{"-max-frame-size", "10"}, nil, "-max-frame-size"},
		{"zero control limit", []string{"-control-limit", "0"}, nil, "-control-limit"},
		{"zero transaction bytes", []string{"-max-transaction-bytes", "0"}, nil, "-max-transaction-bytes"},
		{"zero outbound bytes", []string{"-outbound-bytes", "0"}, nil, "-outbound-bytes"},
	})
}

// settingCase is one bad setting, given as flags (args) or environment
// variables (env), and the text the start-up error must contain (want):
// the setting's name, as a flag or as its variable.
type settingCase struct {
	name string
	args []string
	env  map[string]string
	want string
}

// expectSettingErrors runs the program once per case: it must refuse to
// start with an error containing the case's want. The context is done
// from the start, so a configuration wrongly accepted starts, sees it,
// and stops at once: run then returns nil and the case fails.
func expectSettingErrors(t *testing.T, cases []settingCase) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range cases {
		name := tc.name
		if name == "" {
			name = tc.want
		}
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, tc.args...)
			err := runRecover(ctx, args, func(k string) string { return tc.env[k] })
			if err == nil {
				t.Fatalf("run %q env %v: got nil error, want one naming %s", tc.args, tc.env, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %q env %v: got error %q, want it to name %s", tc.args, tc.env, err, tc.want)
			}
		})
	}
}

// expectStarts runs the program with args and a done context: it must
// accept them.
func expectStarts(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runRecover(ctx, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, args...), func(string) string { return "" }); err != nil {
		t.Errorf("run %q: %v, want it to start", args, err)
	}
}

// TestBadValueIsOneLine checks that a bad value prints one line whether it
// comes from a flag or the environment, and that only -h prints the
// usage.
func TestBadValueIsOneLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"-max-frame-size", "lots"}, nil},
		{"environment", nil, map[string]string{"WSSERVER_MAX_FRAME_SIZE": "lots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(ctx, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, tc.args...), func(k string) string { return tc.env[k] }, &out)
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line", err)
			}
			if out.Len() != 0 {
				t.Errorf("printed %d bytes besides the error, want none:\n%s", out.Len(), out.String())
			}
		})
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "-max-frame-size (WSSERVER_MAX_FRAME_SIZE)") {
		t.Errorf("-h printed no usage:\n%s", out.String())
	}
}

// TestRunStopsWhenDone is the control of TestSettingErrors: with valid
// settings, run starts, sees its context done, shuts down gracefully and
// returns nil.
func TestRunStopsWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	env := map[string]string{"WSSERVER_SEND_LIMIT": "5", "WSSERVER_LOG_FORMAT": "json"}
	if err := run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("run with valid settings: got %v, want nil", err)
	}
	for _, want := range []string{`"msg":"listening"`, `"msg":"stopped"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log: got %q, want a line with %s", out.String(), want)
		}
	}
}

// runRecover is run with io.Discard as stdout, reporting a panic as an
// error: a bad setting must be an error, and a panic here would end every
// other test too.
func runRecover(ctx context.Context, args []string, getenv func(string) string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("run panicked: %v", v)
		}
	}()
	return run(ctx, args, getenv, io.Discard)
}

// operatorSettings are the settings operators script against, by flag
// name; each is also WSSERVER_ and the name in upper case with '_' for
// '-'. Renaming one breaks deployments.
var operatorSettings = []string{
	"addr", "ws-path", "log-level", "log-format", "shutdown-timeout",
	"max-frame-size", "max-headers", "max-header-line", "max-subscriptions",
	"connect-timeout", "heart-beat-send", "heart-beat-receive", "heart-beat-tolerance",
	"outbound-queue", "write-timeout", "allowed-origins",
	"send-limit", "send-window", "send-limit-algorithm", "limited-commands",
	"abuse-drops", "abuse-window", "abuse-ban", "jwt-secret", "auth-required",
	"redis-url", "policy", "trusted-proxies", "limiter-fail",
	"metrics-destination-prefixes",
	"outbound-bytes", "max-transactions", "max-transaction-frames", "max-transaction-bytes",
	"control-limit", "control-window", "drain-period", "drain-grace",
	"http-read-header-timeout", "http-read-timeout", "http-idle-timeout", "http-max-header-bytes",
	"ping-interval", "ping-timeout", "max-sessions-per-principal", "session-lease-ttl", "redis-timeout",
	"admin-addr", "pprof", "demo", "adaptive-procs",
	"jwt-public-key", "jwt-jwks-url", "jwt-jwks-refresh",
	"max-heart-beat",
	"compression", "compression-level", "compression-min-size", "compression-context-takeover",
}

// TestHelpListsEnv checks that -h prints every setting with its
// environment variable and ends the program with flag.ErrHelp.
func TestHelpListsEnv(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h: got error %v, want flag.ErrHelp", err)
	}
	usage := out.String()

	names := map[string]bool{}
	for _, n := range operatorSettings {
		names[n] = true
	}
	var st settings
	st.flagSet(io.Discard).VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	for n := range names {
		env := "WSSERVER_" + strings.ToUpper(strings.ReplaceAll(n, "-", "_"))
		if want := "  -" + n + " (" + env + ")\n"; !strings.Contains(usage, want) {
			t.Errorf("usage lacks the line %q", want)
		}
	}
	if t.Failed() {
		t.Logf("usage:\n%s", usage)
	}
}

// TestHelpSections checks that -h prints its sections in order
// (listeners, limits, admission, sessions, Redis, history, auth,
// backend, tracing, operations), that
// every flag sits in exactly one of them, and that its line is printed
// under its own heading.
func TestHelpSections(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h: got error %v, want flag.ErrHelp", err)
	}
	usage := out.String()

	wantOrder := []string{"Listeners:", "Limits:", "Admission:", "Sessions:", "Redis:", "History:", "Auth:", "Backend:", "Tracing:", "Operations:"}
	if len(flagSections) != len(wantOrder) {
		t.Fatalf("%d sections, want %d: %q", len(flagSections), len(wantOrder), wantOrder)
	}
	starts := make([]int, len(flagSections)+1)
	starts[len(flagSections)] = len(usage)
	for i, sec := range flagSections {
		if !strings.HasPrefix(sec.title, wantOrder[i]) {
			t.Errorf("section %d is %q, want %s", i, sec.title, wantOrder[i])
		}
		starts[i] = strings.Index(usage, "\n"+sec.title+"\n")
		if starts[i] < 0 || (i > 0 && starts[i] < starts[i-1]) {
			t.Fatalf("usage lacks the heading %q after the one before it:\n%s", sec.title, usage)
		}
	}

	section := map[string]int{}
	for i, sec := range flagSections {
		for _, n := range sec.flags {
			if j, dup := section[n]; dup {
				t.Errorf("-%s is in %q and in %q", n, flagSections[j].title, sec.title)
			}
			section[n] = i
		}
	}
	var st settings
	fs := st.flagSet(io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		i, ok := section[f.Name]
		if !ok {
			t.Errorf("-%s is in no section of -h", f.Name)
			return
		}
		at := strings.Index(usage, "  -"+f.Name+" (")
		if at < starts[i] || at > starts[i+1] {
			t.Errorf("-%s is not printed under %q", f.Name, flagSections[i].title)
		}
	})
	for n := range section {
		if fs.Lookup(n) == nil {
			t.Errorf("section lists -%s, which is no flag", n)
		}
	}
}

// TestEnvironmentSetsAndFlagWins checks the precedence documented on
// settings: an environment variable sets a setting, and a flag on the
// command line wins over it. It is seen end to end through the limit the
// server enforces.
func TestEnvironmentSetsAndFlagWins(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"env only", nil, 3},
		{"flag wins", []string{"-send-limit", "4"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"WSSERVER_SEND_LIMIT": "3", "WSSERVER_SEND_WINDOW": "1h"}
			base, _ := startAppEnv(t, env, tc.args...)
			c := dialStomp(t, wsURL(base))
			for i := range 10 {
				if err := c.Send("/topic/e2e.env", "", []byte(fmt.Sprint(i))); err != nil {
					t.Fatalf("SEND %d: %v", i, err)
				}
			}
			disconnect(t, c)
			m := scrape(t, base)
			if got := m[`stompgate_frames_passed_total{command="SEND"}`]; got != float64(tc.want) {
				t.Errorf("passed SEND frames: got %v, want %d", got, tc.want)
			}
		})
	}
}
