// Command wsserver is the stompgate server: STOMP over WebSocket with a
// per-session message limiter, a per-IP handshake limiter (in process or in
// Redis) and Prometheus metrics.
//
//	wsserver [flags]               run the server (wsserver -h lists settings)
//	wsserver nginx-config [flags]  print the nginx config rendered from the policy
//	wsserver -version              print the version and exit
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/procs"
	"github.com/stompgate/stompgate/internal/redact"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/tlscert"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handling so that a
		// second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	err := checkEnviron(os.Environ())
	if err == nil {
		err = run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	}
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "wsserver:", err)
		os.Exit(1)
	}
}

// run is the whole program: it parses settings, wires the server, serves
// until ctx ends, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if versionRequested(args) {
		return printVersion(stdout, buildInfo())
	}
	if len(args) > 0 && args[0] == "nginx-config" {
		return runNginxConfig(args[1:], getenv, stdout)
	}
	var st settings
	if err := st.parse(args, getenv, stdout); err != nil {
		return err
	}
	if err := st.validate(); err != nil {
		return err
	}
	logger, err := newLogger(st.logLevel, st.logFormat, stdout)
	if err != nil {
		return err
	}
	logBuild(logger)
	redis.SetLogger(redisLog{logger})
	st.logConfig(logger)
	st.applyMemoryLimit()
	a, err := newApp(&st, logger)
	if err != nil {
		return err
	}
	defer a.close()
	defer reloadOnHangup(ctx, a.rules)()
	if st.adaptiveProcs {
		defer procs.Adapt(st.procsPolicy(runtime.GOMAXPROCS(0)), procs.DefaultTick, func(n int, reason string) {
			a.metrics.ProcsChanged(metrics.ProcsReasonOf(reason))
			logger.Debug("processors", "gomaxprocs", n, "reason", reason)
		})()
	}

	ln, err := net.Listen("tcp", st.addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", st.addr, err)
	}
	hs, ln, err := a.publicServer(&st, ln, logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if st.tlsCert != "" {
		certs, err := tlscert.New(tlscert.Config{CertFile: st.tlsCert, KeyFile: st.tlsKey, Logger: logger})
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("-tls-cert / -tls-key: %w", err)
		}
		ln = tls.NewListener(ln, certs.TLSConfig())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String(), "tls", st.tlsCert != "", "ws_path", st.wsPath, "demo", st.demo)
	admin, err := startAdmin(&st, a.admin, logger)
	if err != nil {
		_ = hs.Close()
		return err
	}

	select {
	case err := <-errc:
		actx, acancel := context.WithTimeout(context.Background(), adminShutdownGrace)
		defer acancel()
		admin.shutdown(actx)
		return err
	case <-ctx.Done():
	}
	drain(a.stomp, &st, logger)
	logger.Info("shutting down", "timeout", st.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), st.shutdownTimeout)
	defer cancel()
	// http.Server.Shutdown does not wait for hijacked WebSocket
	// connections: the STOMP server closes its sessions itself.
	stompErr := make(chan error, 1)
	go func() { stompErr <- a.stomp.Shutdown(sctx) }()
	httpErr := hs.Shutdown(sctx)
	if err := <-stompErr; err != nil {
		return fmt.Errorf("closing sessions: %w", err)
	}
	if httpErr != nil {
		return fmt.Errorf("http shutdown: %w", httpErr)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	actx, acancel := context.WithTimeout(context.Background(), adminShutdownGrace)
	defer acancel()
	admin.shutdown(actx)
	logger.Info("stopped")
	return nil
}

// newLogger returns the program's logger, writing to w at level in
// format, with tokens redacted (redact.Tokens) from every line.
func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationsAsText}
	switch format {
	case "text":
		return redact.Tokens(slog.New(slog.NewTextHandler(w, opts))), nil
	case "json":
		return redact.Tokens(slog.New(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// redisLog sends go-redis' internal messages (a failed dial per retry
// while Redis is down) to the debug level: the limiter and the relay log
// the outage itself once, at warn.
type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// durationsAsText writes durations as Go writes them ("1.5s"), not as
// integer nanoseconds, which JSON logs would otherwise show.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
