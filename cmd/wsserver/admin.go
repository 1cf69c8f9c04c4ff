package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// defaultAdminAddr keeps the admin listener (metrics, profiling, the
// server API) on loopback: an operator's Prometheus or sidecar reaches it
// on the host, the public never does. Port 8082 sits next to the public
// listener's 8080 and the example game's page (8081), and clear of the
// ports a monitoring host already runs: Prometheus 9090, Pushgateway
// 9091, Alertmanager 9093, node exporter 9100.
const defaultAdminAddr = "127.0.0.1:8082"

// adminFlags registers the settings of the admin listener and of what
// the public one serves besides STOMP.
func (s *settings) adminFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.adminAddr, "admin-addr", defaultAdminAddr, "admin listener: /metrics and, with -pprof, /debug/pprof/ (empty: no admin listener); keep it off the public network")
	fs.BoolVar(&s.pprof, "pprof", false, "serve Go's profiler at /debug/pprof/ on the admin listener")
	fs.BoolVar(&s.demo, "demo", true, "serve the demo page and the session counts it polls on the public listener")
}

// validateAdmin checks the settings adminFlags registers.
func (s *settings) validateAdmin() error {
	if s.pprof && s.adminAddr == "" {
		return badSetting("pprof", s.pprof, "needs the admin listener (-admin-addr)")
	}
	if s.adminAddr != "" && s.adminAddr == s.addr && !strings.HasSuffix(s.addr, ":0") {
		return badSetting("admin-addr", s.adminAddr, "must differ from -addr: the admin endpoints must not be public")
	}
	return nil
}

// adminHandler serves the admin listener's endpoints.
func (a *app) adminHandler(st *settings, logger *slog.Logger) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	// The same liveness and readiness as the public listener's, for a
	// probe that reaches the host only, and that no bound of the public
	// listener (the accept rate in a storm, the admission) can refuse:
	// an orchestrator that restarts a process whose liveness probe
	// fails would otherwise restart an instance for being busy.
	mux.HandleFunc("GET /healthz", serveHealth)
	mux.HandleFunc("GET /readyz", a.serveReadiness)
	if st.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if err := a.mountAPI(mux, st, logger); err != nil {
		return nil, err
	}
	return mux, nil
}

// adminServer is the admin listener, running; nil without -admin-addr.
type adminServer struct {
	hs   *http.Server
	errc chan error
	addr string
}

// startAdmin listens on -admin-addr and serves the admin endpoints. The
// admin listener is for operators on the host; it still gets the HTTP
// timeouts so that a stuck scraper cannot hold connections forever.
func startAdmin(st *settings, h http.Handler, logger *slog.Logger) (*adminServer, error) {
	if st.adminAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", st.adminAddr)
	if err != nil {
		return nil, badSetting("admin-addr", st.adminAddr, err.Error())
	}
	hs := newHTTPServer(st, h, logger)
	s := &adminServer{hs: hs, errc: make(chan error, 1), addr: ln.Addr().String()}
	go func() { s.errc <- hs.Serve(ln) }()
	logger.Info("admin listening", "addr", s.addr, "pprof", st.pprof)
	return s, nil
}

// shutdown stops the admin listener after the public one; a profile in
// progress gets until ctx ends.
func (s *adminServer) shutdown(ctx context.Context) {
	if s == nil {
		return
	}
	if err := s.hs.Shutdown(ctx); err != nil {
		_ = s.hs.Close()
	}
	<-s.errc
}

// adminShutdownGrace bounds the admin listener's shutdown.
const adminShutdownGrace = 2 * time.Second

// serveHealth answers /healthz: 200 "ok" while the process serves HTTP,
// draining or not.
func serveHealth(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "ok")
}
