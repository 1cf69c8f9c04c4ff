//go:build unix

package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestRulesReloadOnSIGHUP runs wsserver as a process of its own, raises
// the chat rule's limit in its policy file and sends the process a real
// SIGHUP: a live session is not dropped and meets the new limit on its
// next frames, and the process says the zones stayed as they were.
func TestRulesReloadOnSIGHUP(t *testing.T) {
	path := writePolicy(t, rulesPolicy(1))
	base, proc := startChild(t, "-policy", path, "-log-level", "info")
	url := wsURL(base)
	sub := dialStomp(t, url)
	chat := subscribe(t, sub, "/topic/chat.lobby")
	pub := dialStomp(t, url)
	publish(t, pub, "/topic/chat.lobby", 3)
	expectDelivered(t, chat, 1, "before SIGHUP")

	rewritePolicy(t, path, rulesPolicy(4))
	if err := proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clientTimeout, func() error {
		if !strings.Contains(proc.Output(), "policy reloaded") {
			return fmt.Errorf("no reload logged yet in %q", proc.Output())
		}
		return nil
	})
	publish(t, pub, "/topic/chat.lobby", 6)
	expectDelivered(t, chat, 4, "after SIGHUP raised the limit to 4")
	if !strings.Contains(proc.Output(), "zones=unchanged") {
		t.Errorf("the reload did not say the zones are unchanged:\n%s", proc.Output())
	}
	s := scrape(t, base)
	if got := s.sum("stompgate_policy_reloads_total", `result="applied"`); got != 1 {
		t.Errorf("reloads applied = %v, want 1", got)
	}
	disconnect(t, pub)
	disconnect(t, sub)
}
