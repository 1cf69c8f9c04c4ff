package scenario

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// buildWsserver builds cmd/wsserver into a temporary directory and
// returns its path; the test fails if it cannot be built.
func buildWsserver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/stompgate/stompgate/cmd/wsserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wsserver: %v\n%s", err, out)
	}
	return bin
}

// runReconnectStorm runs a small storm against real wsserver instances
// and a real redis-server, all started by the scenario, and checks that
// every session came back and that the report's figures add up.
func runReconnectStorm(t *testing.T, cfg reconnectConfig) *reconnectReport {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found: %v; run the project's test command, `make test`, which installs it", err)
	}
	if err := cfg.Common.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := reconnectStorm(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Reconnect
	t.Logf("on A %d, lost %d, back %d, attempts %d, refusals %v, errors %q",
		r.OnA, r.Lost, r.Back, r.Attempts, r.Refusals, r.Errors)

	n := cfg.sessions
	if r.OnA != n || r.FillFailed != 0 {
		t.Errorf("on A %d, fill failed %d; want %d, 0", r.OnA, r.FillFailed, n)
	}
	if r.Lost != n || r.Back != n {
		t.Errorf("lost %d, back %d; want every one of %d lost and back", r.Lost, r.Back, n)
	}
	refused := 0
	for _, c := range r.Refusals {
		refused += c
	}
	if r.Attempts != r.Back+refused {
		t.Errorf("attempts %d != back %d + refused %d", r.Attempts, r.Back, refused)
	}
	if got := sum(r.ArrivalsPer100ms); got != r.Back {
		t.Errorf("arrivals per 100 ms add up to %d, want back %d", got, r.Back)
	}
	if got := sum(r.AttemptsPer100ms); got != r.Attempts {
		t.Errorf("attempts per 100 ms add up to %d, want %d", got, r.Attempts)
	}
	if r.PeakArrivals == 0 || r.PeakArrivals > r.Back {
		t.Errorf("peak arrivals per 100 ms %d, want in [1, %d]", r.PeakArrivals, r.Back)
	}
	if r.Back99Seconds == nil || r.Back100Seconds == nil || *r.Back99Seconds > *r.Back100Seconds {
		t.Errorf("99 %% back at %v, 100 %% at %v; want both, in that order", r.Back99Seconds, r.Back100Seconds)
	}
	if r.RetryAfterEarly != 0 {
		t.Errorf("%d attempts came sooner than the Retry-After asked", r.RetryAfterEarly)
	}
	if r.ServerHandshakes[`{result="accepted"}`] != int64(r.Back) {
		t.Errorf("B's accepted handshakes rose by %d, want %d (every reconnect); all: %v", r.ServerHandshakes[`{result="accepted"}`], r.Back, r.ServerHandshakes)
	}
	// VmHWM is not always at least every sample: the kernel raises its
	// high-water mark lazily, when the resident set shrinks through some
	// paths and not others (a page released by the Go scavenger may
	// leave it behind a sample by a few pages).
	if r.RSSPeakBytes <= 0 || r.RSSHWMBytes <= 0 {
		t.Errorf("B's RSS peak %d sampled, %d VmHWM; want both positive", r.RSSPeakBytes, r.RSSHWMBytes)
	}
	u := r.Untouched
	if u.Sessions != cfg.untouched || u.Disconnected != 0 || cfg.untouched > 0 && (u.Before == nil || u.Storm == nil) {
		t.Errorf("untouched %+v, want %d sessions, none disconnected, latency before and during the storm", u, cfg.untouched)
	}
	// The highest latency of each 100 ms is one of the storm's
	// latencies: their top is the histogram's (which rounds up).
	if u.Storm != nil {
		top := 0.0
		for _, v := range u.StormMaxPer100ms {
			top = max(top, v)
		}
		if top <= 0 || top > u.Storm.Max {
			t.Errorf("untouched highest latency per 100 ms tops at %v ms, want in (0, %v] (the storm's max)", top, u.Storm.Max)
		}
	}
	checkStormSplit(t, r)
	if r.ServerPeakAdmitted < 1 {
		t.Errorf("B's peak admitted in 100 ms = %d, want at least 1: it admitted %d", r.ServerPeakAdmitted, r.Back)
	}
	return r
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

func stormTestConfig(bin string, sessions int, serverArgs string) reconnectConfig {
	return reconnectConfig{
		Common:   Common{URL: defaultURL, TopicPrefix: "/topic/loadtest.", Duration: time.Minute, NoProgress: true},
		wsserver: bin, serverArgs: serverArgs,
		sessions: sessions, untouched: 5, untouchedRate: 10,
		stop: "kill", settle: 500 * time.Millisecond, fillTimeout: time.Minute, concurrency: 50,
		kernelStamps: true,
	}
}

func TestReconnectStormKill(t *testing.T) {
	bin := buildWsserver(t)
	r := runReconnectStorm(t, stormTestConfig(bin, 200, ""))
	if len(r.Refusals) != 0 {
		t.Errorf("refusals %v, want none from a server without admission", r.Refusals)
	}
}

// TestReconnectStormRetryAfter shares the per-IP handshake limit of A
// and B through Redis at one handshake per 5 s: each client's reconnect
// to B right after its handshake with A is refused with 429 and a
// Retry-After, which it honours before it comes back.
func TestReconnectStormRetryAfter(t *testing.T) {
	bin := buildWsserver(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	err := os.WriteFile(pol, []byte(`zones:
  - name: ws_handshake
    key: client_ip
    rate: 12r/m
    burst: 0
    routes:
      - method: GET
        path: /ws
        upstream: ws
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stormTestConfig(bin, 50, "-policy "+pol)
	cfg.untouched = 0
	r := runReconnectStorm(t, cfg)
	if r.Refusals["HTTP 429"] == 0 || r.RetryAfterHonoured == 0 {
		t.Errorf("refusals %v, %d attempts after a Retry-After; want 429s, each followed by one", r.Refusals, r.RetryAfterHonoured)
	}
}

func TestReconnectStormDrain(t *testing.T) {
	bin := buildWsserver(t)
	cfg := stormTestConfig(bin, 100, "-drain-period 1s -drain-grace 100ms")
	cfg.stop = "drain"
	runReconnectStorm(t, cfg)
}

func TestStormServerArgs(t *testing.T) {
	args := []string{"-policy", "p.yaml", "-admit-rate", "500", "--memory-limit=1GiB", "-admit-rate=250"}
	if v, ok := flagValue(args, "admit-rate"); !ok || v != "250" {
		t.Errorf("admit-rate = %q, %v; want the last one, 250", v, ok)
	}
	if v, ok := flagValue(args, "memory-limit"); !ok || v != "1GiB" {
		t.Errorf("memory-limit = %q, %v; want 1GiB", v, ok)
	}
	if _, ok := flagValue(args, "max-sessions"); ok {
		t.Error("max-sessions found, want absent")
	}
	if _, ok := flagValue([]string{"-admit-rate"}, "admit-rate"); ok {
		t.Error("a flag without its value found")
	}
	for in, want := range map[string]int64{"1GiB": 1 << 30, "512MiB": 512 << 20, "1000": 1000, "64KiB": 64 << 10, "2B": 2} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1MiB", "1GB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) succeeded, want an error", in)
		}
	}
}

func TestStormBins(t *testing.T) {
	ms := time.Millisecond
	got := bins([]time.Duration{-5 * ms, 0, 99 * ms, 100 * ms, 350 * ms})
	want := []int{3, 1, 0, 1}
	if len(got) != len(want) {
		t.Fatalf("bins = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bins = %v, want %v", got, want)
		}
	}
	arr := []time.Duration{100 * ms, 200 * ms, 300 * ms}
	if p := backAt(arr, 3); p == nil || *p != 0.3 {
		t.Errorf("backAt(3) = %v, want 0.3", p)
	}
	if p := backAt(arr, 4); p != nil {
		t.Errorf("backAt(4) = %v, want nil", *p)
	}
}

// peakWindow is the largest sum over any n consecutive bins.
func TestStormPeakWindow(t *testing.T) {
	for _, c := range []struct {
		v    []int
		n    int
		want int
	}{
		{nil, 10, 0},
		{[]int{5}, 10, 5},
		{[]int{1, 2, 3, 4}, 2, 7},
		{[]int{9, 0, 0, 1, 1}, 3, 9},
		{[]int{50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 120, 0}, 10, 570},
	} {
		if got := peakWindow(c.v, c.n); got != c.want {
			t.Errorf("peakWindow(%v, %d) = %d, want %d", c.v, c.n, got, c.want)
		}
	}
}

func TestUntouchedSlowBins(t *testing.T) {
	u := untouchedReport{StormMaxPer100ms: []float64{1, 60, 2, 0, 900, 51, 50}}
	n, first, worst := u.slowBins(50)
	if n != 3 || first != 0.1 || worst != 0.4 {
		t.Errorf("slowBins(50) = %d, %v, %v; want 3 bins, the first at 0.1 s, the worst at 0.4 s", n, first, worst)
	}
	if n, _, _ := (untouchedReport{}).slowBins(50); n != 0 {
		t.Errorf("no bins: %d slow", n)
	}
}

// checkStormSplit checks the figures kernel stamps add: every CONNECTED
// and every untouched latency split, arrivals counted by kernel time no
// later than their reads, and each latency's server part within it.
func checkStormSplit(t *testing.T, r *reconnectReport) {
	t.Helper()
	if r.KernelStamps != client.KernelStampsSupported {
		t.Fatalf("kernel stamps %v, want %v on this platform", r.KernelStamps, client.KernelStampsSupported)
	}
	if !r.KernelStamps {
		return
	}
	if r.ConnectedUnstamped != 0 || r.ConnectedToolDelay == nil || r.ConnectedToolDelay.Count != int64(r.Back) {
		t.Errorf("CONNECTEDs: %d unstamped, tool delay %+v; want all %d stamped", r.ConnectedUnstamped, r.ConnectedToolDelay, r.Back)
	}
	if got := sum(r.ArrivalsReadPer100ms); got != r.Back {
		t.Errorf("arrivals as read add up to %d, want %d", got, r.Back)
	}
	// A CONNECTED reaches the socket before the tool reads it: counted
	// by kernel time, the arrivals are never later.
	if got := firstReaching(r.ArrivalsPer100ms, r.Back); got > firstReaching(r.ArrivalsReadPer100ms, r.Back) {
		t.Errorf("all back at bin %d by kernel time, later than bin %d as read", got, firstReaching(r.ArrivalsReadPer100ms, r.Back))
	}
	u := r.Untouched
	if u.Sessions > 0 {
		if u.Split == 0 || u.Unsplit != 0 || u.StormServer == nil || u.StormTool == nil || u.BeforeServer == nil {
			t.Errorf("untouched split %d, unsplit %d, storm server part %+v; want every latency split", u.Split, u.Unsplit, u.StormServer)
		} else if u.StormServer.Max > u.Storm.Max || u.BeforeServer.Max > u.Before.Max {
			t.Errorf("server part max %v / %v ms above the latency's %v / %v ms", u.StormServer.Max, u.BeforeServer.Max, u.Storm.Max, u.Before.Max)
		}
	}
}

// firstReaching returns the first bin by which the running sum of v
// reaches n (len(v) when it never does).
func firstReaching(v []int, n int) int {
	s := 0
	for i, x := range v {
		s += x
		if s >= n {
			return i
		}
	}
	return len(v)
}

// Connections past B's accept rate are refused at accept with the
// prebuilt 503, which the clients read as a 503 with its Retry-After
// and honour: every session still comes back.
func TestReconnectStormAcceptBound(t *testing.T) {
	bin := buildWsserver(t)
	cfg := stormTestConfig(bin, 300, "-admit-rate 100 -admit-burst 5 -accept-rate 110 -accept-burst 5")
	r := runReconnectStorm(t, cfg)
	if r.ServerListenerRefused["accept_rate"] == 0 || r.Refusals["HTTP 503"] < int(r.ServerListenerRefused["accept_rate"]) {
		t.Errorf("B refused %v at accept, the clients saw %v; want refusals at accept, each a 503", r.ServerListenerRefused, r.Refusals)
	}
	if r.RetryAfterHonoured == 0 || r.RetryAfterEarly != 0 {
		t.Errorf("%d attempts after a Retry-After, %d early; want them honoured", r.RetryAfterHonoured, r.RetryAfterEarly)
	}
}
