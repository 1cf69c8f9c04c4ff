package chart

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartStartsServer: wsserver starts on the environment each
// rendering gives its container, so every value the chart renders
// (-memory-limit in bytes, the drain durations, the settings) passes the
// server's own validation, not only its names. Only what cannot exist
// outside a cluster is replaced: the listeners move to loopback port 0,
// the Secrets' values are stand-ins of valid lengths, the Redis URL
// points at a closed port (the server starts without Redis, falling
// back), the policy comes from the rendered ConfigMap, and -max-sessions
// becomes 0 (the server's own choice from its file limit) when this
// machine's open-file limit is below the one a container gets.
func TestChartStartsServer(t *testing.T) {
	bin := buildServer(t)
	hard, err := fileLimit()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range renderings {
		t.Run(r.name, func(t *testing.T) {
			m, err := Validate(render(t, r.args...))
			if err != nil {
				t.Fatal(err)
			}
			stand := map[string]string{
				"WSSERVER_ADDR":       "127.0.0.1:0",
				"WSSERVER_ADMIN_ADDR": "127.0.0.1:0",
				"WSSERVER_REDIS_URL":  "redis://127.0.0.1:1/0",
				"WSSERVER_JWT_SECRET": strings.Repeat("j", 32),
				"WSSERVER_API_KEY":    strings.Repeat("a", 32),
				"WSSERVER_RELAY_KEY":  strings.Repeat("r", 32),
			}
			if cms := m.Of("ConfigMap"); len(cms) == 1 {
				p := filepath.Join(t.TempDir(), "policy.yaml")
				if err := os.WriteFile(p, []byte(cms[0].Value.(*corev1.ConfigMap).Data["policy.yaml"]), 0o644); err != nil {
					t.Fatal(err)
				}
				stand["WSSERVER_POLICY"] = p
			}
			var environ []string
			env := m.Of("Deployment")[0].Value.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env
			for _, e := range env {
				if e.Name != "WSSERVER_MAX_SESSIONS" {
					continue
				}
				n, err := strconv.ParseUint(e.Value, 10, 64)
				if err != nil || n+64 > containerFileLimit {
					t.Errorf("WSSERVER_MAX_SESSIONS=%q: want a cap a container's %d files hold with 64 to spare", e.Value, containerFileLimit)
				}
				if n+64 > hard {
					t.Logf("WSSERVER_MAX_SESSIONS %d is beyond this machine's file limit %d: starting with 0", n, hard)
					stand[e.Name] = "0"
				}
			}
			for _, e := range env {
				v, ok := stand[e.Name]
				if !ok {
					if e.ValueFrom != nil {
						t.Fatalf("%s comes from %+v, and the test has no stand-in for it", e.Name, e.ValueFrom)
					}
					v = e.Value
				}
				environ = append(environ, e.Name+"="+v)
			}
			startServer(t, bin, environ)
		})
	}
}

// startServer runs bin with environ until it logs that it listens, and
// fails the test with its output if it exits first.
func startServer(t *testing.T, bin string, environ []string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = environ
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	defer func() {
		_ = cmd.Process.Kill()
		for range lines { // the reader ends at the pipe's end; Wait after it
		}
		_ = cmd.Wait()
	}()
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var log []string
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("wsserver exited before listening:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, line)
			if strings.Contains(line, `"msg":"listening"`) {
				return
			}
		case <-timeout:
			t.Fatalf("wsserver did not listen within 2 minutes:\n%s", strings.Join(log, "\n"))
		}
	}
}

// buildServer builds cmd/wsserver of this tree into the test's directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "./cmd/wsserver")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/wsserver: %v\n%s", err, out)
	}
	return bin
}

// containerFileLimit is the open-file limit a container runtime
// commonly gives (containerd, CRI-O): the chart's -max-sessions must fit
// in it, since the server refuses a cap its limit cannot hold.
const containerFileLimit = 1 << 20
