//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// TestRulesReloadOnSIGHUP runs the program and sends the process a real
// SIGHUP after raising the chat rule's limit in the policy file: a live
// session is not dropped and meets the new limit on its next frames.
func TestRulesReloadOnSIGHUP(t *testing.T) {
	// Held for the whole test, so that a SIGHUP arriving while the
	// program is not listening can never take the default action and end
	// the test binary.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	path := writePolicy(t, rulesPolicy(1))
	var out syncWriter
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-policy", path},
			func(string) string { return "" }, &out)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	var base string
	waitFor(t, clientTimeout, func() error {
		_, rest, ok := strings.Cut(out.String(), "msg=listening addr=")
		if !ok {
			return fmt.Errorf("no listening line yet in %q", out.String())
		}
		base = "http://" + strings.Fields(rest)[0]
		return nil
	})
	url := wsURL(base)
	sub := dialStomp(t, url)
	chat := subscribe(t, sub, "/topic/chat.lobby")
	pub := dialStomp(t, url)
	publish(t, pub, "/topic/chat.lobby", 3)
	expectDelivered(t, chat, 1, "before SIGHUP")

	rewritePolicy(t, path, rulesPolicy(4))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clientTimeout, func() error {
		if !strings.Contains(out.String(), "policy reloaded") {
			return fmt.Errorf("no reload logged yet in %q", out.String())
		}
		return nil
	})
	publish(t, pub, "/topic/chat.lobby", 6)
	expectDelivered(t, chat, 4, "after SIGHUP raised the limit to 4")
	if !strings.Contains(out.String(), "zones=unchanged") {
		t.Errorf("the reload did not say the zones are unchanged:\n%s", out.String())
	}
	disconnect(t, pub)
	disconnect(t, sub)
}
