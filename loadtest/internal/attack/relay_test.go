package attack

import (
	"slices"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/testredis"
)

// relay-inject against a real wsserver on a real Redis: without
// -relay-key the forged messages reach the honest room and the target
// fails; with a key nothing injected reaches it and the target passes. The
// 5 MB payloads never reach a subscriber either way.
func TestRelayInjectAgainstWsserver(t *testing.T) {
	rs := testredis.Start(t)
	for _, tt := range []struct {
		name    string
		args    []string
		want    string
		foreign bool
	}{
		{"no key", nil, "fail", true},
		{"key", []string{"-relay-key", strings.Repeat("s", 32)}, "pass", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, pid := startWsserver(t, append([]string{"-redis-url", "redis://" + rs.Addr, "-relay", "redis"}, tt.args...)...)
			cfg := shortAbuse(url, pid)
			cfg.attacks, cfg.redisURL = attackRelayInject, "redis://"+rs.Addr
			cfg.injectSize = 5 << 20
			_, ar := runShort(t, &cfg)
			a := ar.find(attackRelayInject)
			if a == nil {
				t.Fatalf("relay-inject did not run: %+v", ar.Attacks)
			}
			if a.Attacker.Figures[figInjectedLarge] < 1 || a.Attacker.Figures[figInjectedForged] < 2 {
				t.Fatalf("injected %v, want large and forged payloads", a.Attacker.Figures)
			}
			if got := a.Honest.Foreign > 0; got != tt.foreign {
				t.Errorf("foreign messages %d, want some: %v", a.Honest.Foreign, tt.foreign)
			}
			// The large payloads never arrive: at most the forged ones do.
			if max := int64(a.Attacker.Figures[figInjectedForged]) * int64(a.Honest.Subscribers); a.Honest.Foreign > max {
				t.Errorf("foreign messages %d, above the %d forged ones: a large payload got through", a.Honest.Foreign, max)
			}
			if a.Honest.Disconnected > 0 {
				t.Errorf("honest subscribers disconnected: %v", a.Honest.Disconnects)
			}
			var inject *targetResult
			for i := range ar.Targets {
				if strings.HasPrefix(ar.Targets[i].Target, "relay-inject") {
					inject = &ar.Targets[i]
				}
			}
			if inject == nil || inject.Status != tt.want {
				t.Errorf("relay-inject target %+v, want status %s", inject, tt.want)
			}
		})
	}
}

// serverAttacks are the attacks that need only the server: relay-inject,
// which also needs its Redis, has a test of its own.
func serverAttacks() []string {
	return slices.DeleteFunc(slices.Clone(allAttacks), func(a string) bool { return a == attackRelayInject })
}
