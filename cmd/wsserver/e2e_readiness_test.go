package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/syncbuf"
	"github.com/stompgate/stompgate/internal/testproc"
	"github.com/stompgate/stompgate/internal/testredis"
)

// closedRedisURL is a Redis URL on a loopback port nothing listens on:
// every connection is refused.
func closedRedisURL(t *testing.T) string {
	return "redis://127.0.0.1:" + strconv.Itoa(testproc.FreePort(t)) + "/0"
}

// readyzBody is what a test reads of /readyz.
type readyzBody struct {
	Ready     bool            `json:"ready"`
	Admission json.RawMessage `json:"admission"`
	Redis     *dependencyJSON `json:"redis"`
	AppRedis  *dependencyJSON `json:"app_redis"`
}

// dependencyJSON is one Redis entry of /readyz.
type dependencyJSON struct {
	Ready    bool     `json:"ready"`
	Uses     []string `json:"uses"`
	Fallback bool     `json:"fallback"`
	Degraded []string `json:"degraded"`
	Error    string   `json:"error"`
	Latency  string   `json:"latency"`
	Role     string   `json:"redis_role"`
	Version  string   `json:"redis_version"`
}

// getReadyz fetches base's /readyz: its status code and body.
func getReadyz(t *testing.T, base string) (int, readyzBody) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	var b readyzBody
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("/readyz %d %q: %v", resp.StatusCode, raw, err)
	}
	if b.Admission == nil {
		t.Errorf("/readyz %q: no admission entry", raw)
	}
	return resp.StatusCode, b
}

// TestStartupDependencyLines runs the program with an unreachable
// -redis-url and a real -app-redis-url: start-up does not wait for the
// first, logs one line per Redis (NOT reached with the error, reached
// with role, version and latency), and serves in fallback: /readyz 200
// naming the unreachable Redis.
func TestStartupDependencyLines(t *testing.T) {
	app := testredis.Start(t)
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	base := "http://" + addr
	var out syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-admin-addr", "127.0.0.1:0", "-log-format", "json",
			"-redis-url", closedRedisURL(t), "-app-redis-url", app.URL(), "-policy", testPolicyFile(t)},
			func(string) string { return "" }, &out)
	}()
	waitFor(t, clientTimeout, func() error {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	lines := map[string]map[string]any{}
	for _, line := range strings.Split(out.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, "redis ") {
			setting, _ := m["setting"].(string)
			if lines[setting] != nil {
				t.Errorf("two start-up lines for %s", setting)
			}
			lines[setting] = m
		}
	}
	shared, ok := lines["-redis-url"]
	if !ok {
		t.Fatalf("no start-up line for -redis-url:\n%s", out.String())
	}
	if msg := shared["msg"].(string); !strings.HasPrefix(msg, "redis NOT reached") || shared["level"] != "WARN" {
		t.Errorf("-redis-url line %v, want a WARN \"redis NOT reached\"", shared)
	}
	if e, _ := shared["err"].(string); e == "" {
		t.Errorf("-redis-url line without the error: %v", shared)
	}
	if uses, _ := shared["uses"].(string); !strings.Contains(uses, useHandshakeLimit) || !strings.Contains(uses, useSessionCaps) {
		t.Errorf("-redis-url uses %q, want the handshake limit and the session caps", uses)
	}
	appLine, ok := lines["-app-redis-url"]
	if !ok {
		t.Fatalf("no start-up line for -app-redis-url:\n%s", out.String())
	}
	if appLine["msg"] != "redis reached" || appLine["role"] != "master" || appLine["version"] == "" || appLine["latency"] == "" {
		t.Errorf("-app-redis-url line %v, want reached with role master, a version and a latency", appLine)
	}
	if appLine["uses"] != useAppStream {
		t.Errorf("-app-redis-url uses %v, want %s", appLine["uses"], useAppStream)
	}

	code, body := getReadyz(t, base)
	if code != http.StatusOK || !body.Ready {
		t.Errorf("/readyz %d ready %v, want 200 true: -limiter-fail open serves in fallback", code, body.Ready)
	}
	if r := body.Redis; r == nil || r.Ready || !r.Fallback || r.Error == "" {
		t.Errorf("/readyz redis %+v, want not ready, fallback, with the error", r)
	}
	if r := body.AppRedis; r == nil || !r.Ready || r.Fallback || r.Role != "master" || r.Latency == "" {
		t.Errorf("/readyz app_redis %+v, want ready, role master, a latency", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestReadinessFailClosedUnreachable: with -limiter-fail closed and an
// unreachable Redis the handshakes are refused, so /readyz answers 503
// on both listeners, naming Redis and its error, before any client came.
func TestReadinessFailClosedUnreachable(t *testing.T) {
	base, _ := startApp(t, "-redis-url", closedRedisURL(t), "-limiter-fail", "closed")
	for _, b := range []string{base, adminBase(t, base)} {
		code, body := getReadyz(t, b)
		if code != http.StatusServiceUnavailable || body.Ready {
			t.Errorf("%s/readyz %d ready %v, want 503 false", b, code, body.Ready)
		}
		if r := body.Redis; r == nil || r.Ready || r.Fallback || r.Error == "" {
			t.Errorf("%s/readyz redis %+v, want not ready, no fallback, with the error", b, r)
		}
	}
	// What the 503 stands for: a client is refused.
	_, resp, err := dialWS(t, wsURL(base))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("handshake: %v %s, want 429 while Redis is unreachable (-limiter-fail closed)", err, describe(resp))
	}
}

// TestReadinessRedisStopped stops a real Redis mid-test and starts it
// again: with -limiter-fail closed /readyz turns 503, with open it stays
// 200 and names the fallback (the limiter's, once a handshake met the
// outage); both return to ready with Redis.
func TestReadinessRedisStopped(t *testing.T) {
	for _, fail := range []string{"open", "closed"} {
		t.Run(fail, func(t *testing.T) {
			rs := testredis.Start(t)
			base, _ := startApp(t, "-redis-url", rs.URL(), "-limiter-fail", fail)
			code, body := getReadyz(t, base)
			if code != http.StatusOK || !body.Ready {
				t.Fatalf("/readyz %d ready %v before the outage, want 200 true", code, body.Ready)
			}
			if r := body.Redis; r == nil || !r.Ready || r.Fallback || r.Role != "master" || r.Version == "" || r.Latency == "" || r.Error != "" {
				t.Fatalf("/readyz redis %+v before the outage, want ready with role, version and latency", r)
			}

			rs.Kill()
			waitFor(t, clientTimeout, func() error {
				// A client meets the outage, as it would in production.
				if ws, _, err := dialWS(t, wsURL(base)); err == nil {
					_ = ws.CloseNow()
				}
				code, body := getReadyz(t, base)
				r := body.Redis
				if r == nil || r.Ready || r.Error == "" {
					return fmt.Errorf("redis %+v, want not ready with the error", r)
				}
				if len(r.Degraded) == 0 || r.Degraded[0] != useHandshakeLimit {
					return fmt.Errorf("redis degraded %v, want the handshake limit first", r.Degraded)
				}
				switch {
				case fail == "closed" && (code != http.StatusServiceUnavailable || body.Ready || r.Fallback):
					return fmt.Errorf("%d ready %v fallback %v, want 503 false false", code, body.Ready, r.Fallback)
				case fail == "open" && (code != http.StatusOK || !body.Ready || !r.Fallback):
					return fmt.Errorf("%d ready %v fallback %v, want 200 true true", code, body.Ready, r.Fallback)
				}
				return nil
			})
			if fail == "open" {
				if n := scrape(t, base).sum("stompgate_handshake_limiter_fallback"); n != 1 {
					t.Errorf("stompgate_handshake_limiter_fallback %v during the outage, want 1", n)
				}
			}

			rs.Restart()
			waitFor(t, clientTimeout, func() error {
				code, body := getReadyz(t, base)
				if code != http.StatusOK || !body.Ready || body.Redis == nil || !body.Redis.Ready || body.Redis.Fallback || len(body.Redis.Degraded) > 0 {
					return fmt.Errorf("%d ready %v redis %+v, want 200 and ready again", code, body.Ready, body.Redis)
				}
				return nil
			})
		})
	}
}

// TestRedisCheckTimeoutSetting: the start-up check's bound must be
// positive, on the command line and in the environment.
func TestRedisCheckTimeoutSetting(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"zero redis check timeout", []string{"-redis-check-timeout", "0s"}, nil, "-redis-check-timeout"},
		{"negative redis check timeout in env", nil, map[string]string{"WSSERVER_REDIS_CHECK_TIMEOUT": "-1s"}, "redis-check-timeout"},
	})
}
