package attack

import (
	"strings"
	"testing"
	"time"
)

// TestReconnectLoopAttack runs reconnect-loop against a wsserver with a
// reconnect limit of 3 a minute: each loop (one address; one principal
// from a new address each turn) completes 3 CONNECTs and is refused
// after, and another address still connects, so the target passes.
// Against the same server with the limit off the loops complete every
// turn and the target, judged against 3, fails.
func TestReconnectLoopAttack(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit string
		want  string
	}{
		{"limit on", "3", "pass"},
		{"limit off", "0", "fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, pid := startWsserver(t, "-jwt-secret", testJWTSecret, "-reconnect-limit", tt.limit)
			cfg := shortAbuse(url, pid)
			cfg.attacks = attackReconnectLoop
			cfg.Duration = 3 * time.Second
			cfg.loopInterval = 200 * time.Millisecond
			cfg.reconnectLimit = 3
			_, ar := runShort(t, &cfg)
			a := ar.find(attackReconnectLoop)
			if a == nil {
				t.Fatalf("reconnect-loop did not run: %+v", ar.Attacks)
			}
			f := a.Attacker.Figures
			if f[figLoopControl] != 1 {
				t.Errorf("another address was refused: %s", a.Attacker.Summary)
			}
			if tt.want == "pass" && (f[figLoopAddrCompleted] != 3 || f[figLoopPrincipalCompleted] != 3 ||
				f[figLoopAddrRefusedHS] < 1 || f[figLoopPrincipalRefused] < 1) {
				t.Errorf("with the limit on: %s; want 3 completed by each loop, then refusals", a.Attacker.Summary)
			}
			for _, tg := range ar.Targets {
				if strings.HasPrefix(tg.Target, "reconnect-loop") && tg.Status != tt.want {
					t.Errorf("target %q: %s (%s), want %s", tg.Target, tg.Status, tg.Detail, tt.want)
				}
			}
		})
	}
}
