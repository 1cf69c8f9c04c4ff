package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/stompgate/stompgate/admission"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
)

// The instance admission (package admission): how many sessions this
// instance holds, how fast it admits new ones and how much memory it
// lets them take, with the 503s that refuse the rest.

// fdReserve is the least headroom of file descriptors kept beside the
// sessions, whatever the limit: the listeners, Redis connections, the
// log and the files a process opens. An explicit -max-sessions must
// leave this much of RLIMIT_NOFILE.
const fdReserve = 64

// fdHeadroomMin and fdHeadroomFraction size the default -max-sessions:
// RLIMIT_NOFILE less max(256, 10 %), so a full instance still has the
// descriptors to accept the handshakes it refuses (each is a socket until
// answered), reach Redis and serve its health checks. At 20,000 open
// files that is 18,000 sessions.
const (
	fdHeadroomMin      = 256
	fdHeadroomFraction = 0.10
)

// defaultMaxSessionsNoFileLimit is the default -max-sessions where the
// process has no limit of open files to derive it from (Windows, or an
// unlimited RLIMIT_NOFILE): ten thousand sessions, what a small
// instance holds in well under a GiB.
const defaultMaxSessionsNoFileLimit = 10_000

// admitRefillTime sizes the default -admit-rate: a full instance refills
// in 20 seconds (-max-sessions/20 per second), well under a minute, so
// the clients of a lost instance are back within a minute of it while
// this one admits no more at once than it can take.
const admitRefillTime = 20

// minAdmitRate is the floor of the default -admit-rate: 50 new sessions
// a second, so a small cap does not make reconnecting slower than a
// person notices.
const minAdmitRate = 50

// minMemoryLimit is the least -memory-limit: a Go program holds a few
// MiB before it serves anything, so a smaller limit is a unit forgotten.
const minMemoryLimit = 1 << 20

// defaultMemoryAdmitThreshold is admission.DefaultMemoryThreshold.
const defaultMemoryAdmitThreshold = admission.DefaultMemoryThreshold

// maxRetryAfterMax bounds -retry-after-max: a refused client told to
// wait more than ten minutes has given up, and the retry schedule keeps
// one counter per second of it.
const maxRetryAfterMax = 10 * time.Minute

// admissionSettings are the instance admission's flags and the values
// validate derives from them.
type admissionSettings struct {
	maxSessions          int
	admitRate            float64
	admitBurst           int
	memoryLimit          byteSize
	memoryAdmitThreshold float64
	retryAfterMax        time.Duration

	// goMemLimit is the GOMEMLIMIT environment variable, read by parse.
	goMemLimit string
	// admit is the configuration validate derived: the gate's bounds in
	// force and where they come from.
	admit admitDerived
}

// admitDerived is the admission configuration in force.
type admitDerived struct {
	cfg admission.Config
	// fileLimit is RLIMIT_NOFILE (0: none); maxFrom, rateFrom and
	// memoryFrom say where each bound came from, for the start-up log.
	fileLimit                     uint64
	maxFrom, rateFrom, memoryFrom string
	// setMemoryLimit is whether run sets Go's soft memory limit (from
	// -memory-limit; GOMEMLIMIT is applied by the runtime itself).
	setMemoryLimit bool
}

// admissionFlags registers the admission settings.
func (s *settings) admissionFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.maxSessions, "max-sessions", 0, "most sessions this instance holds at once; more handshakes get 503 and a Retry-After (0: RLIMIT_NOFILE less max(256, 10%), or 10000 without a file limit; -1: no cap); above RLIMIT_NOFILE less 64 is an error")
	fs.Float64Var(&s.admitRate, "admit-rate", 0, "new sessions per second this instance admits, all clients together; more get 503 (0: -max-sessions/20, at least 50, so a full instance refills in 20s; -1: no rate bound)")
	fs.IntVar(&s.admitBurst, "admit-burst", 0, "new sessions admitted at once after a quiet spell, on top of -admit-rate (0: a tenth of a second of -admit-rate, or 3√(rate/10) when more)")
	fs.Var(&s.memoryLimit, "memory-limit", "Go's soft memory limit for the process (debug.SetMemoryLimit), in bytes or with a unit (512MiB, 2GiB); above -memory-admit-threshold of it new sessions get 503, open ones are untouched (0: none, or GOMEMLIMIT if set)")
	fs.Float64Var(&s.memoryAdmitThreshold, "memory-admit-threshold", defaultMemoryAdmitThreshold, "fraction (0-1] of -memory-limit above which new sessions are refused")
	fs.DurationVar(&s.retryAfterMax, "retry-after-max", admission.DefaultRetryAfterMax, "longest Retry-After of an admission 503: refused clients are spread at -admit-rate over a window that grows with their number, up to this (1s to 10m)")
}

// validateAdmission checks the admission settings and derives the
// configuration in force (s.admit).
func (s *settings) validateAdmission() error {
	d := admitDerived{maxFrom: "flag", rateFrom: "flag", memoryFrom: "flag"}
	limit, hasLimit := fileLimit()
	d.fileLimit = limit
	switch {
	case s.maxSessions < -1:
		return badSetting("max-sessions", s.maxSessions, "must be -1 (no cap), 0 (derived) or positive")
	case s.maxSessions == -1:
		d.maxFrom = "no cap"
	case s.maxSessions == 0 && hasLimit:
		headroom := max(uint64(fdHeadroomMin), uint64(float64(limit)*fdHeadroomFraction))
		d.cfg.MaxSessions = int(max(limit/2, 1)) // a limit below the headroom: half of it
		if limit > 2*headroom {
			d.cfg.MaxSessions = int(limit - headroom)
		}
		d.maxFrom = fmt.Sprintf("RLIMIT_NOFILE %d less max(%d, 10%%)", limit, fdHeadroomMin)
	case s.maxSessions == 0:
		d.cfg.MaxSessions = defaultMaxSessionsNoFileLimit
		d.maxFrom = "no file limit: default"
	default:
		if hasLimit && (limit <= fdReserve || uint64(s.maxSessions) > limit-fdReserve) {
			return badSetting("max-sessions", s.maxSessions, fmt.Sprintf("is more than the open-file limit (RLIMIT_NOFILE %d) can hold with %d descriptors to spare: raise the limit (ulimit -n, LimitNOFILE=) or lower the cap", limit, fdReserve))
		}
		d.cfg.MaxSessions = s.maxSessions
	}
	switch {
	case math.IsNaN(s.admitRate) || math.IsInf(s.admitRate, 0) || (s.admitRate < 0 && s.admitRate != -1):
		return badSetting("admit-rate", s.admitRate, "must be -1 (no rate bound), 0 (derived) or positive")
	case s.admitRate == -1:
		d.rateFrom = "no rate bound"
	case s.admitRate == 0:
		basis := d.cfg.MaxSessions
		if basis == 0 {
			basis = defaultMaxSessionsNoFileLimit
		}
		d.cfg.Rate = max(float64(basis)/admitRefillTime, minAdmitRate)
		d.rateFrom = fmt.Sprintf("max(sessions/%d, %d)", admitRefillTime, minAdmitRate)
	default:
		d.cfg.Rate = s.admitRate
	}
	if s.admitBurst < 0 {
		return badSetting("admit-burst", s.admitBurst, "must not be negative (0: a tenth of a second of -admit-rate)")
	}
	d.cfg.Burst = s.admitBurst
	if t := s.memoryAdmitThreshold; !(t > 0 && t <= 1) {
		return badSetting("memory-admit-threshold", t, "must be above 0 and at most 1")
	}
	d.cfg.MemoryThreshold = s.memoryAdmitThreshold
	if s.memoryLimit > 0 && s.memoryLimit < minMemoryLimit {
		return badSetting("memory-limit", s.memoryLimit.String(), "must be 0 (none) or at least 1MiB: a smaller limit keeps the garbage collector running and refuses every session (a unit forgotten? 512MiB)")
	}
	d.cfg.MemoryLimit = uint64(s.memoryLimit)
	d.setMemoryLimit = s.memoryLimit > 0
	if s.memoryLimit == 0 {
		d.memoryFrom = "none"
		if s.goMemLimit != "" && s.goMemLimit != "off" {
			n, err := parseByteSize(s.goMemLimit)
			if err != nil {
				return fmt.Errorf("GOMEMLIMIT %q: %v", s.goMemLimit, err)
			}
			d.cfg.MemoryLimit, d.memoryFrom = n, "GOMEMLIMIT"
		}
	}
	if s.retryAfterMax < time.Second || s.retryAfterMax > maxRetryAfterMax {
		return badSetting("retry-after-max", s.retryAfterMax, "must be between 1s and 10m")
	}
	d.cfg.RetryAfterMax = s.retryAfterMax
	s.admit = d
	return nil
}

// applyMemoryLimit sets Go's soft memory limit to -memory-limit, when it
// is set (GOMEMLIMIT is the runtime's own). Only run calls it: it is
// process-wide.
func (s *settings) applyMemoryLimit() {
	if s.admit.setMemoryLimit {
		debug.SetMemoryLimit(int64(s.admit.cfg.MemoryLimit))
	}
}

// newAdmission builds the gate from the derived configuration, logs it
// once and exposes its state on the registry. It sets a.gate.
func (a *app) newAdmission(st *settings, logger *slog.Logger) error {
	g, err := admission.New(st.admit.cfg)
	if err != nil {
		return fmt.Errorf("-max-sessions / -admit-rate / -memory-limit: %w", err)
	}
	a.gate = g
	c := g.Config()
	logger.Info("admission",
		"max_sessions", c.MaxSessions, "max_sessions_from", st.admit.maxFrom, "file_limit", st.admit.fileLimit,
		"admit_rate", c.Rate, "admit_rate_from", st.admit.rateFrom, "admit_burst", c.Burst,
		"memory_limit", c.MemoryLimit, "memory_limit_from", st.admit.memoryFrom,
		"memory_admit_threshold", c.MemoryThreshold, "retry_after_max", c.RetryAfterMax.String())
	a.registry.MustRegister(metrics.NewAdmissionCollector(func() metrics.AdmissionStats {
		s := g.State()
		return metrics.AdmissionStats{Sessions: s.Sessions, MaxSessions: s.MaxSessions,
			MemoryUsed: s.MemoryUsed, MemoryLimit: s.MemoryLimit, Refusing: s.Refusing, Backlog: s.Backlog, PeakAdmitted: s.PeakAdmitted}
	}))
	return nil
}

// admit puts the gate in front of checks (the per-client limits) and
// next (the STOMP server).
func (a *app) admit(next http.Handler, checks func(http.Handler) (http.Handler, error)) (http.Handler, error) {
	return admission.Middleware(admission.MiddlewareConfig{Gate: a.gate, Observer: admissionObserver{a.metrics}, Checks: checks}, next)
}

// admissionObserver counts the gate's decisions.
type admissionObserver struct{ m *metrics.Metrics }

func (o admissionObserver) Admitted() { o.m.AdmissionAdmitted() }

func (o admissionObserver) Refused(reason string) {
	o.m.AdmissionRefused(metrics.AdmissionReasonOf(reason))
	o.m.Handshake(outcome.HandshakeRejectedAdmission)
}

// readiness is the JSON body of /readyz: ready, and one entry per check
// (a map, so that checks can be added without changing the shape).
type readiness struct {
	Ready  bool           `json:"ready"`
	Checks map[string]any `json:"-"`
}

// MarshalJSON writes {"ready":..., "<check>": {...}, ...}.
func (r readiness) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(r.Checks)+1)
	for k, v := range r.Checks {
		m[k] = v
	}
	m["ready"] = r.Ready
	return json.Marshal(m)
}

// admissionCheck is the "admission" entry of /readyz.
type admissionCheck struct {
	Ready       bool   `json:"ready"`
	Sessions    int    `json:"sessions"`
	Max         int    `json:"max"`
	MemoryUsed  uint64 `json:"memory_used,omitempty"`
	MemoryLimit uint64 `json:"memory_limit,omitempty"`
	Refusing    string `json:"refusing,omitempty"`
}

// serveReadiness answers /readyz: 503 "shutting down" once the server
// drains or shuts down; else 200, or 503 while the admission refuses
// every new session or a Redis whose outage refuses every handshake
// (-limiter-fail closed) is unreachable, with the checks as JSON: the
// admission and each Redis the configuration needs (see dependencies).
func (a *app) serveReadiness(w http.ResponseWriter, r *http.Request) {
	if !a.stomp.Ready() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	s := a.gate.State()
	adm := admissionCheck{Ready: s.Refusing == "", Sessions: s.Sessions, Max: s.MaxSessions,
		MemoryUsed: s.MemoryUsed, MemoryLimit: s.MemoryLimit, Refusing: s.Refusing}
	body := readiness{Checks: map[string]any{"admission": adm}}
	deps := a.deps.report(time.Now(), body.Checks)
	body.Ready = adm.Ready && deps
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !body.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}
