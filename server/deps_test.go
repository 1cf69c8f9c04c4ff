package server

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// module is this module's path, the prefix of every package it holds.
const module = "github.com/stompgate/stompgate/"

// corePackages are the packages an embedding program needs to serve
// STOMP: they must build on the standard library alone (the WebSocket
// protocol is internal/wsconn's). Redis (handshake, relay, sessioncap), JWTs (jwtauth) and
// Prometheus (metrics) are adapters that plug into them.
var corePackages = []string{
	module + "stompframe",
	module + "broker",
	module + "server",
	module + "interceptor",
	module + "admission",
	module + "presence",
}

// allowedDependency reports whether the core may depend on the non-standard
// package path: only this module's own packages (whose own dependencies
// are in the same listing, so an adapter imported by mistake shows up
// through what it imports).
func allowedDependency(path string) bool {
	return strings.HasPrefix(path, module)
}

// TestCoreDependencies lists every package the core packages build on
// (go list -deps, tests excluded) and fails on any outside the standard
// library and this module: go-redis, golang-jwt or
// Prometheus above all, which would reach every program that embeds the
// server. It names the import that brings each one in.
func TestCoreDependencies(t *testing.T) {
	t.Parallel()
	imports := listDeps(t, corePackages) // non-standard package -> its imports
	var outside []string
	for p := range imports {
		if !allowedDependency(p) {
			outside = append(outside, p)
		}
	}
	slices.Sort(outside)
	if len(outside) == 0 {
		return
	}
	// The edges from this module into the outside, which are what a fix
	// removes.
	var edges []string
	for p, imps := range imports {
		if !strings.HasPrefix(p, module) {
			continue
		}
		for _, imp := range imps {
			if slices.Contains(outside, imp) {
				edges = append(edges, p+" imports "+imp)
			}
		}
	}
	slices.Sort(edges)
	t.Errorf("the core packages depend on %d packages outside the standard library, coder/websocket and this module:\n\t%s\nthrough:\n\t%s",
		len(outside), strings.Join(outside, "\n\t"), strings.Join(edges, "\n\t"))
}

// listDeps runs go list -deps on pkgs (tests excluded) and returns each
// package outside the standard library that they build on, pkgs
// included, with what it imports.
func listDeps(t *testing.T, pkgs []string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// One line per package: its path, whether it is in the standard
	// library, then what it imports.
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}{{range .Imports}} {{.}}{{end}}"}, pkgs...)
	cmd := exec.CommandContext(ctx, goTool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] == "true" {
			continue
		}
		imports[f[0]] = f[2:]
	}
	for _, p := range pkgs {
		if _, ok := imports[p]; !ok {
			t.Fatalf("go list -deps does not list %s itself:\n%s", p, out)
		}
	}
	return imports
}

func TestAllowedDependency(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path string
		want bool
	}{
		{module + "sessionlimit", true},
		{module + "internal/wsconn", true},
		{"github.com/coder/websocket", false},
		{"github.com/redis/go-redis/v9", false},
		{"github.com/golang-jwt/jwt/v5", false},
		{"github.com/prometheus/client_golang/prometheus", false},
		{"go.uber.org/atomic", false},
	} {
		if got := allowedDependency(tt.path); got != tt.want {
			t.Errorf("allowedDependency(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
