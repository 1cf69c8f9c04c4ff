package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The dependencies are the Redis servers the configuration needs:
// -redis-url (the handshake limit, the session caps, the relay, the
// disconnects between instances, the reconnect counts, the per-principal
// limit and, without -app-redis-url, the app stream) and -app-redis-url
// (the app stream). Start-up checks each once, bounded by
// -redis-check-timeout, and logs one line saying whether it was reached;
// it never waits longer, and the server then serves as -limiter-fail
// says. /readyz reports each one from the state the stores already keep
// (their fallback mode, the relay's outage) and from a PING made at most
// once per readinessCheckEvery in the background, so that a probe never
// waits on Redis.

// defaultRedisCheckTimeout bounds the start-up check of one Redis (a PING
// and an INFO) and each readiness PING: a Redis that answers neither
// within two seconds is failing for every client, and two Redis servers
// delay start-up by four seconds at most.
const defaultRedisCheckTimeout = 2 * time.Second

// readinessCheckEvery is how old a readiness PING's answer may be before a
// /readyz call starts another: one round trip per second at most,
// however often load balancers probe.
const readinessCheckEvery = time.Second

// dependencyFlags registers the settings of the dependency checks.
func (s *settings) dependencyFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.redisCheckTimeout, "redis-check-timeout", defaultRedisCheckTimeout, "bound on the start-up check of each Redis (-redis-url, -app-redis-url: PING and INFO, logged as reached or NOT reached) and on the PING /readyz makes at most once a second; start-up never waits longer")
}

// validateDependencies checks the settings dependencyFlags registers.
func (s *settings) validateDependencies() error {
	if s.redisCheckTimeout <= 0 {
		return badSetting("redis-check-timeout", s.redisCheckTimeout, "must be positive")
	}
	return nil
}

// The uses of a Redis, as /readyz and the start-up log name them.
const (
	useHandshakeLimit = "handshake_limit"
	useSessionCaps    = "session_caps"
	useRelay          = "relay"
	useDisconnects    = "disconnects"
	useReconnect      = "reconnect"
	usePrincipalLimit = "principal_limit"
	useAppStream      = "app_stream"
)

// use is one thing the server does with a Redis. degraded, nil for a use
// that keeps no outage state, reports whether it currently serves
// without Redis (fallback mode, the relay's outage).
type use struct {
	name     string
	degraded func() bool
}

// dependency is one Redis the configuration needs, and what the last
// check of it found.
type dependency struct {
	name    string // the /readyz key: "redis" or "app_redis"
	setting string // the flag that configures it
	client  redis.UniversalClient
	uses    []use
	// gates is true when an unreachable Redis makes every handshake
	// fail (-limiter-fail closed with the limiter or the caps on it):
	// the instance is then not ready.
	gates bool
	// fallback is true when the server serves what this Redis backs
	// from process memory while it is unreachable (-limiter-fail open).
	fallback bool
	// role and version are Redis's, from the start-up check (empty when
	// it was not reached then).
	role, version string

	// mu guards the fields below.
	mu       sync.Mutex
	checked  time.Time // when the last check ended
	err      error     // the last check's error; nil when it was answered
	latency  time.Duration
	checking bool // a readiness PING is under way
}

// dependencies are the Redis servers of the configuration, checked.
type dependencies struct {
	list    []*dependency
	timeout time.Duration
	// wg counts the readiness PINGs under way; close waits for them.
	wg sync.WaitGroup
	// mu guards closed and orders wg.Add before close's wg.Wait.
	mu     sync.Mutex
	closed bool
	// ctx ends at close, cutting a PING short.
	ctx    context.Context
	cancel context.CancelFunc
}

// newDependencies lists the Redis servers a's configuration uses, checks
// each once within st.redisCheckTimeout and logs one line per Redis.
func (a *app) newDependencies(st *settings, logger *slog.Logger) *dependencies {
	d := &dependencies{timeout: st.redisCheckTimeout}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	closed := st.limiterFail == "closed"
	if a.redis != nil {
		dep := &dependency{name: "redis", setting: "redis-url", client: a.redis, gates: closed, fallback: !closed,
			uses: []use{{useHandshakeLimit, a.limiter.InFallback}}}
		if a.capStore != nil {
			dep.uses = append(dep.uses, use{useSessionCaps, a.caps.InFallback})
		}
		if a.relay != nil {
			dep.uses = append(dep.uses, use{useRelay, a.relay.InOutage})
		}
		if a.fanout != nil {
			dep.uses = append(dep.uses, use{name: useDisconnects})
		}
		if a.loops != nil {
			dep.uses = append(dep.uses, use{useReconnect, a.loops.InFallback})
		}
		if a.plimit != nil {
			dep.uses = append(dep.uses, use{usePrincipalLimit, a.plimit.InFallback})
		}
		if a.appRedis == nil {
			dep.uses = append(dep.uses, use{name: useAppStream})
		}
		d.list = append(d.list, dep)
	}
	if a.appRedis != nil {
		d.list = append(d.list, &dependency{name: "app_redis", setting: "app-redis-url", client: a.appRedis,
			uses: []use{{name: useAppStream}}})
	}
	for _, dep := range d.list {
		dep.startupCheck(d.timeout)
		dep.log(logger)
	}
	return d
}

// startupCheck PINGs the Redis and reads its role and version, within
// timeout.
func (dep *dependency) startupCheck(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sent := time.Now()
	err := dep.client.Ping(ctx).Err()
	latency := time.Since(sent)
	if err == nil {
		if info, ierr := dep.client.Info(ctx, "server", "replication").Result(); ierr == nil {
			dep.role, dep.version = infoValue(info, "role"), infoValue(info, "redis_version")
		}
	}
	dep.mu.Lock()
	dep.checked, dep.err, dep.latency = time.Now(), err, latency
	dep.mu.Unlock()
}

// infoValue returns the value of field in the text of Redis's INFO.
func infoValue(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// log writes the start-up line of dep: reached, with its role, version
// and latency, or NOT reached, with the error and what the server does
// meanwhile.
func (dep *dependency) log(logger *slog.Logger) {
	dep.mu.Lock()
	err, latency := dep.err, dep.latency
	dep.mu.Unlock()
	attrs := []any{"setting", "-" + dep.setting, "uses", strings.Join(dep.useNames(), ",")}
	if err == nil {
		logger.Info("redis reached", append(attrs, "role", dep.role, "version", dep.version,
			"latency", latency.Round(10*time.Microsecond).String())...)
		return
	}
	logger.Warn("redis NOT reached: "+dep.meanwhile(), append(attrs, "err", err.Error())...)
}

// meanwhile says what the server does while dep is unreachable.
func (dep *dependency) meanwhile() string {
	switch {
	case dep.gates:
		return "every handshake is refused (-limiter-fail closed) and /readyz answers 503 until it answers"
	case dep.fallback:
		return "serving from process memory (-limiter-fail open) until it answers; /readyz stays 200 and names the fallback"
	default:
		return "app SENDs get ERROR until it answers"
	}
}

// useNames lists dep's uses.
func (dep *dependency) useNames() []string {
	names := make([]string, len(dep.uses))
	for i, u := range dep.uses {
		names[i] = u.name
	}
	return names
}

// dependencyCheck is one dependency's entry in /readyz.
type dependencyCheck struct {
	// Ready is true when the last PING was answered and no use serves
	// without Redis.
	Ready bool     `json:"ready"`
	Uses  []string `json:"uses"`
	// Fallback is true while not ready and serving from process memory
	// (-limiter-fail open).
	Fallback bool `json:"fallback"`
	// Degraded are the uses that serve without Redis right now.
	Degraded []string `json:"degraded,omitempty"`
	Error    string   `json:"error,omitempty"`
	Latency  string   `json:"latency,omitempty"`
	// CheckedAgo is how long ago the last PING ended.
	CheckedAgo string `json:"checked_ago"`
	Role       string `json:"redis_role,omitempty"`
	Version    string `json:"redis_version,omitempty"`
}

// report adds each dependency's entry to checks and returns false when
// one of them makes the instance not ready (see dependency.gates). It
// costs no round trip: a PING older than readinessCheckEvery is renewed
// in the background for a later call.
func (d *dependencies) report(now time.Time, checks map[string]any) bool {
	ready := true
	if d == nil {
		return ready
	}
	for _, dep := range d.list {
		c := dep.state(now, d)
		checks[dep.name] = c
		if !c.Ready && dep.gates {
			ready = false
		}
	}
	return ready
}

// state is dep's entry as of now; it starts a PING when the last one is
// older than readinessCheckEvery and none runs.
func (dep *dependency) state(now time.Time, d *dependencies) dependencyCheck {
	c := dependencyCheck{Uses: dep.useNames(), Role: dep.role, Version: dep.version}
	for _, u := range dep.uses {
		if u.degraded != nil && u.degraded() {
			c.Degraded = append(c.Degraded, u.name)
		}
	}
	dep.mu.Lock()
	err, latency, checked := dep.err, dep.latency, dep.checked
	stale := now.Sub(checked) >= readinessCheckEvery && !dep.checking
	if stale {
		dep.checking = true
	}
	dep.mu.Unlock()
	if stale {
		d.start(dep)
	}
	c.Ready = err == nil && len(c.Degraded) == 0
	c.Fallback = !c.Ready && dep.fallback
	if err != nil {
		c.Error = err.Error()
	} else {
		c.Latency = latency.Round(10 * time.Microsecond).String()
	}
	c.CheckedAgo = max(now.Sub(checked), 0).Round(time.Millisecond).String()
	return c
}

// start runs ping(dep) unless d is closed.
func (d *dependencies) start(dep *dependency) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		dep.mu.Lock()
		dep.checking = false
		dep.mu.Unlock()
		return
	}
	d.wg.Add(1)
	go d.ping(dep)
}

// ping renews dep's check with one PING bounded by d.timeout.
func (d *dependencies) ping(dep *dependency) {
	defer d.wg.Done()
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	sent := time.Now()
	err := dep.client.Ping(ctx).Err()
	latency := time.Since(sent)
	cancel()
	dep.mu.Lock()
	defer dep.mu.Unlock()
	dep.checking = false
	if d.ctx.Err() != nil {
		return // cut short by close: proves nothing
	}
	dep.checked, dep.err, dep.latency = time.Now(), err, latency
}

// close stops the readiness PINGs and waits for them; call it before the
// Redis clients close. A nil d does nothing.
func (d *dependencies) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}
