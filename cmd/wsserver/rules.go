package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/policy"
	"github.com/stompgate/stompgate/sessionlimit"
)

// ruleSet holds the policy's destination rules in force and replaces them
// when the policy file is re-read (SIGHUP). Readers (the LimitStage, and
// Options and PrincipalLimit for the delivery side and the per-principal
// limit) see the old rules or the new ones, never a mix: each swap is one
// atomic pointer store. Only the destination rules are reloaded; the
// zones (handshake rate, session caps, the rendered nginx configuration)
// stay as loaded at start.
type ruleSet struct {
	path    string        // -policy; empty: the compiled-in policy
	zones   []policy.Zone // as loaded at start, to say when a reload differs
	metrics *metrics.Metrics
	logger  *slog.Logger

	current atomic.Pointer[policy.Rules]

	mu    sync.Mutex              // guards stage and alg, and serialises reloads
	stage *interceptor.LimitStage // nil until attach
	alg   sessionlimit.Algorithm  // -send-limit-algorithm, for rules' limits
}

// newRuleSet compiles the destination rules of pol, the policy loaded
// from path at start.
func newRuleSet(path string, pol policy.Policy, m *metrics.Metrics, logger *slog.Logger) (*ruleSet, error) {
	rs, err := pol.Rules()
	if err != nil {
		return nil, fmt.Errorf("-policy: %w", err)
	}
	r := &ruleSet{path: path, zones: pol.Zones, metrics: m, logger: logger}
	r.current.Store(rs)
	m.SetRules(rs.Names())
	if rs.Len() > 0 {
		logger.Info("destination rules loaded", "policy", path, "rules", rs.Len(),
			"reload", "SIGHUP re-reads the destination rules; zones stay as loaded at start",
			"nginx", "destination rules are STOMP-level, rendered nowhere in nginx")
	}
	return r, nil
}

// attach makes st enforce the rules, with limits of algorithm alg, and
// returns what it enforces first (nil with no rules).
func (r *ruleSet) attach(st *interceptor.LimitStage, alg sessionlimit.Algorithm) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := stageRules(r.current.Load(), alg)
	if err != nil {
		return err
	}
	r.stage, r.alg = st, alg
	st.SetRules(t)
	return nil
}

// stageRules converts compiled policy rules into the LimitStage's; nil
// for none, so the stage's per-frame path stays as without rules.
func stageRules(rs *policy.Rules, alg sessionlimit.Algorithm) (*interceptor.DestinationRules, error) {
	if rs.Len() == 0 {
		return nil, nil
	}
	rules := make([]interceptor.DestinationRule, rs.Len())
	for i := range rules {
		pr := rs.Rule(i)
		rules[i] = interceptor.DestinationRule{Name: pr.Name, Commands: pr.Commands, ReadOnly: pr.ReadOnly}
		if pr.Send.IsSet() {
			rules[i].Send = &sessionlimit.Config{Algorithm: alg, Limit: pr.Send.Limit, Window: pr.Send.Window}
		}
	}
	return interceptor.NewDestinationRules(rs.Index, rules)
}

// reload re-reads the policy file and, when it parses and validates,
// puts its destination rules in force for every session's next frame.
// A session's count under a rule that changed starts afresh; under an
// unchanged one it carries on. On any error the old rules stay. Each
// call is counted by result and logged.
func (r *ruleSet) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reloadLocked()
	if err != nil {
		r.metrics.PolicyReload(metrics.ReloadRefused)
		r.logger.Error("policy reload refused; the destination rules in force stay", "policy", r.path, "err", err)
		return err
	}
	r.metrics.PolicyReload(metrics.ReloadApplied)
	return nil
}

func (r *ruleSet) reloadLocked() error {
	pol, err := policy.Load(r.path)
	if err != nil {
		return err
	}
	rs, err := pol.Rules()
	if err != nil {
		return err
	}
	var t *interceptor.DestinationRules
	if r.stage != nil {
		if t, err = stageRules(rs, r.alg); err != nil {
			return err
		}
	}
	r.metrics.SetRules(rs.Names())
	r.current.Store(rs)
	if r.stage != nil {
		r.stage.SetRules(t)
	}
	zones := "unchanged"
	if !reflect.DeepEqual(pol.Zones, r.zones) {
		zones = "changed in the file but kept as loaded at start (restart to apply them)"
	}
	r.logger.Info("policy reloaded: destination rules in force", "policy", r.path, "rules", rs.Len(),
		"zones", zones, "nginx", "destination rules are STOMP-level, rendered nowhere in nginx")
	return nil
}

// Options returns the delivery options of the rule in force for dest:
// the server's per-destination settings (latest-value delivery,
// subscriber cap) read them per call, so a reload applies at once.
func (r *ruleSet) Options(dest string) policy.Options { return r.current.Load().Options(dest) }

// PrincipalLimit returns the per-principal limit of the rule in force
// for dest (see policy.Rules.PrincipalLimit).
func (r *ruleSet) PrincipalLimit(dest string) (rule string, limit int, window time.Duration, ok bool) {
	return r.current.Load().PrincipalLimit(dest)
}

// RuleDropped counts frames the LimitStage stopped, by rule.
func (o observer) RuleDropped(rule string, n int) { o.m.RuleFramesDropped(rule, n) }

// reloadOnHangup calls r.reload on every SIGHUP until ctx ends, and
// returns a function that stops listening and waits for the loop. The
// signal is registered before it returns, so a SIGHUP sent after that
// never takes the default action (ending the process).
func reloadOnHangup(ctx context.Context, r *ruleSet) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = r.reload() // logged and counted
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}
