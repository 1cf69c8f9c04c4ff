package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// browserTicTacToe is the JSON line e2e/browser/tictactoe.mjs prints.
type browserTicTacToe struct {
	Marks         []string `json:"marks"`
	Boards        []string `json:"boards"`
	Results       []string `json:"results"`
	Sockets       []int    `json:"sockets"`
	PageErrors    []string `json:"pageErrors"`
	CSPViolations []string `json:"cspViolations"`
}

// TestBrowserTicTacToe plays the example game in two tabs of a real
// headless Chromium (e2e/browser/tictactoe.mjs) on the page the game's
// command serves: each tab gets its mark, sees the other's moves by
// clicks, and shows the result, with one WebSocket each (no
// reconnection), no CSP violation and no uncaught exception.
func TestBrowserTicTacToe(t *testing.T) {
	node, chromium := browserTools(t)
	_, page := startTicTacToe(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(browserDir, "tictactoe.mjs"), page+"/")
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node tictactoe.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	line := strings.TrimSpace(stdout.String())
	t.Logf("browser observed: %s", line)
	var got browserTicTacToe
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("tictactoe.mjs output %q: %v", line, err)
	}
	if len(got.PageErrors) > 0 {
		t.Errorf("uncaught exceptions in the page: %q", got.PageErrors)
	}
	if len(got.CSPViolations) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", got.CSPViolations)
	}
	if !slices.Equal(got.Marks, []string{"X", "O"}) {
		t.Errorf("the tabs show marks %q, want X then O", got.Marks)
	}
	if !slices.Equal(got.Boards, []string{"XXXOO....", "XXXOO...."}) {
		t.Errorf("the tabs show boards %q, want X's top row on both", got.Boards)
	}
	if !slices.Equal(got.Results, []string{"You win!", "X wins."}) {
		t.Errorf("the tabs show results %q", got.Results)
	}
	if !slices.Equal(got.Sockets, []int{1, 1}) {
		t.Errorf("the tabs opened %v WebSockets, want one each", got.Sockets)
	}
}
