package main

import (
	"bufio"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// envLineRE is a setting in deploy/stompgate.env, given or commented out.
var envLineRE = regexp.MustCompile(`^#?(WSSERVER_[A-Z0-9_]+)=(.*)$`)

// TestDeployEnvFile: every variable the example environment file names,
// given or commented out, is a setting of the server, and the settings it
// gives start a server that validates.
func TestDeployEnvFile(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../deploy/stompgate.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	known := map[string]bool{}
	var st settings
	st.flagSet(io.Discard).VisitAll(func(fl *flag.Flag) { known[envName(fl.Name)] = true })

	env := map[string]string{}
	named := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		m := envLineRE.FindStringSubmatch(line)
		if m == nil {
			if line != "" && !strings.HasPrefix(line, "# ") && line != "#" {
				t.Errorf("stompgate.env:%d: %q is neither a comment nor WSSERVER_NAME=value", n, line)
			}
			continue
		}
		named++
		if !known[m[1]] {
			t.Errorf("stompgate.env:%d: %s is not a setting of wsserver", n, m[1])
		}
		if !strings.HasPrefix(line, "#") {
			env[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if named < 5 || len(env) == 0 {
		t.Fatalf("stompgate.env names %d settings and gives %d, want an example of each kind", named, len(env))
	}
	var given settings
	if err := given.parse(nil, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatalf("settings from stompgate.env: %v", err)
	}
	if err := given.validate(); err != nil {
		t.Fatalf("settings from stompgate.env: %v", err)
	}
	if given.addr != "127.0.0.1:8080" || given.trustedProxies != "127.0.0.1/32" {
		t.Errorf("stompgate.env: addr %q, trusted proxies %q: want the loopback address nginx on the host proxies to, and nginx trusted",
			given.addr, given.trustedProxies)
	}
	if given.demo {
		t.Error("stompgate.env leaves the demo page on: production serves its public chat room and flood button")
	}
}
