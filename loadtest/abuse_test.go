package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
)

// startWsserver builds cmd/wsserver, starts it with its default settings
// on a free loopback port, and returns its ws URL and process id. The
// test fails if the server cannot be built or started.
func startWsserver(t *testing.T, extra ...string) (string, int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/stompgate/stompgate/cmd/wsserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wsserver: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-admin-addr", "127.0.0.1:0", "-log-level", "error"}, extra...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := testproc.Start(cmd)
	if err != nil {
		t.Fatalf("starting wsserver: %v", err)
	}
	t.Cleanup(func() { p.Stop(syscall.SIGTERM, 10*time.Second) })
	err = p.WaitReady(30*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("wsserver not ready: %v\n%s", err, p.Output())
	}
	return "ws://" + addr + "/ws", cmd.Process.Pid
}

// shortAbuse is every attack, scaled down to run in seconds.
func shortAbuse(url string, pid int) abuseConfig {
	c := abuseConfig{
		common:         testCommon(url, 1500*time.Millisecond),
		attacks:        strings.Join(serverAttacks(), ","),
		sampleInterval: 50 * time.Millisecond,
		honestSubs:     2, honestPubs: 2, honestRate: 5, honestRead: defaultHonestRead, honestBytes: 100,
		sendLimit:       defaultSendLimit,
		receiptsMessage: 8000,
		commitSessions:  2, commitAfter: time.Second, commitBody: 256,
		txSessions: 2, txBody: 10_000,
		churnSubs:      150,
		httpConns:      20,
		httpPath:       "/healthz",
		silentSessions: 3,
		perIPRate:      defaultPerIPRate,
		injectSize:     1 << 20, injectRate: 20,
	}
	c.pid = pid
	return c
}

func TestAbuseAgainstWsserver(t *testing.T) {
	url, pid := startWsserver(t)
	cfg := shortAbuse(url, pid)
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := abuse(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ar := rep.Abuse
	if ar == nil || rep.Interrupted {
		t.Fatalf("abuse report %+v, interrupted %v; want a completed run", ar, rep.Interrupted)
	}
	var names []string
	for _, a := range ar.Attacks {
		names = append(names, a.Name)
	}
	if got, want := strings.Join(names, ","), strings.Join(serverAttacks(), ","); got != want {
		t.Fatalf("attacks run %s, want %s", got, want)
	}
	if len(ar.Targets) != 6 {
		t.Errorf("%d targets, want 6: %+v", len(ar.Targets), ar.Targets)
	}
	for _, tg := range ar.Targets {
		if tg.Status != "pass" && tg.Status != "fail" && tg.Status != "n/a" {
			t.Errorf("target %q: status %q", tg.Target, tg.Status)
		}
	}
	byName := map[string]attackResult{}
	for _, a := range ar.Attacks {
		byName[a.Name] = a
		// The server is this machine's process: /proc has its figures.
		if s := a.Server; s.Source != "proc" || s.Samples < 2 || s.RSSBefore <= 0 || s.RSSPeak < s.RSSBefore {
			t.Errorf("%s: server usage %+v, want /proc samples with peak ≥ before > 0", a.Name, s)
		}
		h := a.Honest
		if h.Sent == 0 || h.Expected != h.Sent*int64(cfg.honestSubs) {
			t.Errorf("%s: honest sent %d, expected %d; want sent > 0 and expected = sent × %d", a.Name, h.Sent, h.Expected, cfg.honestSubs)
		}
		if a.Attacker.Sessions == 0 || a.Attacker.Open+a.Attacker.ClosedByServer != a.Attacker.Sessions {
			t.Errorf("%s: attacker %d sessions, %d open, %d closed; want every session accounted for", a.Name,
				a.Attacker.Sessions, a.Attacker.Open, a.Attacker.ClosedByServer)
		}
		if a.Attacker.Summary == "" {
			t.Errorf("%s: no attacker summary", a.Name)
		}
	}
	// An attack that does not touch the room leaves it whole: every
	// honest message counted, with a latency.
	if h := byName[attackSilent].Honest; h.Delivered != h.Expected || h.Disconnected != 0 || h.Latency == nil || h.Latency.Count != h.Delivered {
		t.Errorf("silent: honest %+v, want everything delivered with latencies", h)
	}
	if a := byName[attackReceipts].Attacker; a.Sessions != 1 || a.FramesWritten < 1000 {
		t.Errorf("receipts attacker: %d sessions, %d frames; want 1 session and thousands of frames", a.Sessions, a.FramesWritten)
	}
	if a := byName[attackSilent].Attacker; a.Sessions != cfg.silentSessions || a.FramesWritten != 0 {
		t.Errorf("silent attacker: %d sessions, %d frames; want %d and none", a.Sessions, a.FramesWritten, cfg.silentSessions)
	}
	if a := byName[attackHTTPIdle].Attacker; a.Sessions != cfg.httpConns || a.Figures[figOpenAtEnd] != float64(a.Open) {
		t.Errorf("http-idle attacker: %d connections, figures %v; want %d", a.Sessions, a.Figures, cfg.httpConns)
	}
	if a := byName[attackSubChurn].Attacker; a.Figures[figOpsPerSec] <= 0 || a.Figures[figSubscriptions] != float64(cfg.churnSubs) {
		t.Errorf("sub-churn attacker figures %v, want ops > 0 on %d subscriptions", a.Figures, cfg.churnSubs)
	}
	if a := byName[attackUTF8].Attacker; a.Figures[figTextMessages] < 1 || a.Figures[figBinaryMessages] < 1 {
		t.Errorf("utf8 attacker figures %v, want text and binary messages", a.Figures)
	}
	if a := byName[attackCommitBurst].Attacker; a.Figures[figCommitted] <= 0 {
		t.Errorf("commit-burst attacker figures %v, want frames committed", a.Figures)
	}
	// One IP's sessions, each under the send limit: what the observer got
	// is bounded by the sessions held times the limit, whatever the cap.
	a := byName[attackPerIP].Attacker
	held, rate := a.Figures[figSessionsPeak], a.Figures[figDeliveredAvg]
	if held < 1 || rate <= 0 {
		t.Errorf("sessions-per-ip figures %v, want sessions held and messages delivered", a.Figures)
	}
	if bound := 2 * held * float64(cfg.sendLimit); rate > bound {
		t.Errorf("sessions-per-ip: %.1f msg/s from at most %.0f sessions, above %.0f", rate, held, bound)
	}

	// The server under test is this tree's: the envelope holds, so the
	// targets that a short run can judge pass.
	for _, tg := range ar.Targets {
		switch {
		case strings.HasPrefix(tg.Target, "honest subscribers stay connected"),
			strings.HasPrefix(tg.Target, "receipts keeps server RSS"):
			if tg.Status != "pass" {
				t.Errorf("target %q: %s (%s), want pass", tg.Target, tg.Status, tg.Detail)
			}
		}
	}

	var text bytes.Buffer
	rep.writeText(&text, cfg.title())
	for _, want := range append(allAttacks, "receipts keeps server RSS under 64 MiB", "honest subscribers stay connected through utf8") {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(rep); err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Abuse == nil || len(back.Abuse.Attacks) != len(serverAttacks()) {
		t.Errorf("JSON round trip: %v, %+v", err, back.Abuse)
	}
}

func TestAbuseJudge(t *testing.T) {
	const mb = 1 << 20
	withRSS := func(name string, before, peak int64) attackResult {
		return attackResult{Name: name, Server: serverUsage{Source: "proc", RSSBefore: before, RSSPeak: peak}}
	}
	perIP := func(rate float64) attackResult {
		return attackResult{Name: attackPerIP, Attacker: attackerReport{Figures: map[string]float64{figSessionsHeld: 12, figDeliveredEnd: rate}}}
	}
	tests := []struct {
		name    string
		cap     int
		attacks []attackResult
		want    []string // status per target, in judge's order
	}{
		{"nothing run", 0, nil, []string{"n/a", "n/a", "n/a", "n/a", "n/a", "n/a"}},
		{"under the bounds", 5, []attackResult{
			withRSS(attackReceipts, 15*mb, 40*mb), withRSS(attackTxFill, 20*mb, 100*mb),
			{Name: attackCommitBurst, Honest: honestReport{Subscribers: 3}},
			{Name: attackUTF8, Honest: honestReport{Subscribers: 3}},
			perIP(99),
			{Name: attackRelayInject, Honest: honestReport{Subscribers: 3}},
		}, []string{"pass", "pass", "pass", "pass", "pass", "pass"}},
		{"over the bounds", 5, []attackResult{
			withRSS(attackReceipts, 15*mb, 64*mb), withRSS(attackTxFill, 20*mb, 300*mb),
			{Name: attackCommitBurst, Honest: honestReport{Subscribers: 3, Disconnected: 1, Disconnects: []string{"subscriber 0: closed 1008 slow consumer"}}},
			{Name: attackUTF8, Honest: honestReport{Subscribers: 3, Disconnected: 3}},
			perIP(101),
			{Name: attackRelayInject, Honest: honestReport{Subscribers: 3, Foreign: 40}},
		}, []string{"fail", "fail", "fail", "fail", "fail", "fail"}},
		{"could not run", 5, []attackResult{
			{Name: attackReceipts, Error: "BEGIN: refused"}, {Name: attackUTF8, Error: "refused"}, {Name: attackPerIP, Error: "refused"},
			{Name: attackRelayInject, Error: "needs -redis-url"},
		}, []string{"n/a", "n/a", "n/a", "n/a", "n/a", "n/a"}},
		{"not measured, cap not known", 0, []attackResult{
			{Name: attackReceipts}, {Name: attackTxFill}, perIP(1000),
		}, []string{"n/a", "n/a", "n/a", "n/a", "n/a", "n/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &abuseReport{Attacks: tt.attacks}
			r.judge(&abuseConfig{sendLimit: 20, sessionCap: tt.cap})
			if len(r.Targets) != len(tt.want) {
				t.Fatalf("%d targets, want %d", len(r.Targets), len(tt.want))
			}
			for i, tg := range r.Targets {
				if tg.Status != tt.want[i] {
					t.Errorf("%s = %s (%s), want %s", tg.Target, tg.Status, tg.Detail, tt.want[i])
				}
			}
		})
	}
}

func TestUsagePeak(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := &usageSampler{src: usageSource{pid: 1}}
	// Half a second between samples: 0.5 cores, then 1.5 cores over the
	// second from 1s to 2s, then idle.
	for i, cpuMs := range []int{0, 250, 500, 1250, 2000, 2000, 2000} {
		s.samples = append(s.samples, usageSample{
			at:  t0.Add(time.Duration(i) * 500 * time.Millisecond),
			rss: int64(10+i) << 20,
			cpu: time.Duration(cpuMs) * time.Millisecond,
		})
	}
	u := s.usage(t0, t0.Add(3*time.Second))
	if u.CPUSeconds != 2 || u.CPUCores != 0.667 || u.CPUCoresPeak != 1.5 {
		t.Errorf("CPU %vs, %v cores, peak %v; want 2s, 0.667, 1.5", u.CPUSeconds, u.CPUCores, u.CPUCoresPeak)
	}
	if u.RSSBefore != 10<<20 || u.RSSPeak != 16<<20 || u.RSSEnd != 16<<20 {
		t.Errorf("RSS before %d, peak %d, end %d", u.RSSBefore, u.RSSPeak, u.RSSEnd)
	}
}

func TestAbuseAttackList(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"silent,receipts", "receipts,silent", false},
		{" utf8 ,, tx-fill", "tx-fill,utf8", false},
		{"receipts,bogus", "", true},
		{",", "", true},
	}
	for _, tt := range tests {
		c := abuseConfig{attacks: tt.in}
		got, err := c.attackList()
		if (err != nil) != tt.wantErr || strings.Join(got, ",") != tt.want {
			t.Errorf("attackList(%q) = %v, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
