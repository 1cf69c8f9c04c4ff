package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
	"github.com/stompgate/stompgate/policy"
)

// startWsserver builds cmd/wsserver, starts it with its default settings
// and args on a free loopback port, and returns its ws URL and process id. The
// test fails if the server cannot be built or started.
func startWsserver(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/stompgate/stompgate/cmd/wsserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wsserver: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	admin := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-admin-addr", admin, "-log-level", "error"}, args...)...)
	testproc.OwnGroup(cmd)
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
	url := "ws://" + addr + "/ws"
	metricsURLs.Store(url, "http://"+admin+"/metrics")
	t.Cleanup(func() { metricsURLs.Delete(url) })
	return url, cmd.Process.Pid
}

// metricsURLs maps the ws URL of a server startWsserver started to its
// admin listener's /metrics.
var metricsURLs sync.Map

// runShort validates cfg and runs it, returning the report and its abuse
// section (nil when there is none).
func runShort(t *testing.T, cfg *abuseConfig) (*scenario.Report, *abuseReport) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := abuse(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ar, _ := rep.Abuse.(*abuseReport)
	return rep, ar
}

// shortAbuse is every attack, scaled down to run in seconds.
func shortAbuse(url string, pid int) abuseConfig {
	c := abuseConfig{
		Common:         scenario.Common{URL: url, TopicPrefix: "/topic/loadtest.", Duration: 1500 * time.Millisecond, Spread: true, NoProgress: true},
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
		ipv6Addresses:  3, handshakeRate: defaultHandshakeRate, handshakeBurst: defaultHandshakeBurst,
		appSessions: 2, appBody: 10_000, appTotalBytes: defaultAppTotalBytes,
		floodConns:  20,
		slowReaders: 5, slowPublishers: 2, slowMessage: 20_000,
		slowReadRate: defaultSlowReadRate, slowReadBuffer: defaultSlowReadBuffer,
		floodSessions:     defaultFloodSessions,
		jwtSecret:         testJWTSecret,
		principalSessions: defaultPrincipalSessions, principalLimit: defaultPrincipalLimit,
		injectSize: 1 << 20, injectRate: 20,
		loopInterval: defaultLoopInterval, reconnectLimit: defaultReconnectLimit, reconnectWindow: defaultReconnectWindow,
		bombs: 10,
	}
	c.PID = pid
	c.sessionCap, c.httpIdleTimeout = defaultSessionCap(), defaultHTTPIdleTimeout
	if m, ok := metricsURLs.Load(url); ok {
		c.MetricsURL = m.(string)
	}
	return c
}

// testJWTSecret is the -jwt-secret of the server token-churn runs against.
const testJWTSecret = "a secret for the abuse test, 32 bytes or more"

func TestAbuseAgainstWsserver(t *testing.T) {
	// The honest room reconnects from the same source addresses for each
	// attack: at 1.5 s an attack, more often than -reconnect-limit allows
	// in a minute. TestReconnectLoopAttack runs reconnect-loop against
	// the limit.
	url, pid := startWsserver(t, "-jwt-secret", testJWTSecret, "-reconnect-limit", "0", "-compression")
	cfg := shortAbuse(url, pid)
	rep, ar := runShort(t, &cfg)
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
	var none abuseReport
	none.judge(&cfg)
	if len(ar.Targets) != len(none.Targets) {
		t.Errorf("%d targets, want %d: %+v", len(ar.Targets), len(none.Targets), ar.Targets)
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
		// What the server processed, from its own counters, next to
		// what the client wrote: at least the honest room's SENDs.
		if f := a.ServerFrames; f == nil || f.SendReceived < h.Sent {
			t.Errorf("%s: server frames %+v, want at least the honest room's %d SENDs", a.Name, f, h.Sent)
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
	for _, name := range []string{attackSilent, attackSilentHB} {
		if a := byName[name].Attacker; a.Sessions != cfg.silentSessions || a.FramesWritten != 0 {
			t.Errorf("%s attacker: %d sessions, %d frames; want %d and none", name, a.Sessions, a.FramesWritten, cfg.silentSessions)
		}
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
	if a := byName[attackUnlimitedFrames].Attacker; a.Sessions != cfg.floodSessions || a.FramesWritten < 1000 || a.Open != cfg.floodSessions {
		t.Errorf("unlimited-frames attacker: %d sessions, %d frames, %d open; want %d sessions, all open, thousands of frames",
			a.Sessions, a.FramesWritten, a.Open, cfg.floodSessions)
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
			strings.HasPrefix(tg.Target, "receipts keeps server RSS"),
			strings.HasPrefix(tg.Target, "user-forge"),
			strings.HasPrefix(tg.Target, "token-churn"),
			strings.HasPrefix(tg.Target, "principal-flood"):
			if tg.Status != "pass" {
				t.Errorf("target %q: %s (%s), want pass", tg.Target, tg.Status, tg.Detail)
			}
		}
	}

	var text bytes.Buffer
	rep.WriteText(&text, cfg.Title())
	for _, want := range append(allAttacks, "receipts keeps server RSS under 64 MiB", "honest subscribers stay connected through utf8",
		"server processed:", "client-side count", "sub-churn: the honest room keeps", "http-idle: idle connections closed") {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(rep); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Abuse *abuseReport `json:"abuse"`
	}
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
	silent := func(name string, open int) attackResult {
		return attackResult{Name: name, Attacker: attackerReport{Sessions: 3, Open: open}}
	}
	forge := func(sent, received, unmarked float64) attackResult {
		return attackResult{Name: attackUserForge, Attacker: attackerReport{Figures: map[string]float64{
			figForgedSent: sent, figForgedReceived: received, figForgedUnmarked: unmarked}}}
	}
	// appFill has unanswered honest app SENDs and Redis grown by growth,
	// judged against a 64 MiB total.
	appFill := func(unanswered float64, growth int64) attackResult {
		return attackResult{Name: attackAppFill, Attacker: attackerReport{Figures: map[string]float64{
			figHonestAppSent: 10, figHonestAppFailed: unanswered, figHonestAppTaken: 10 - unanswered,
			figRedisBefore: 1 * mb, figRedisPeak: float64(1*mb + growth),
		}}}
	}
	slow := func(peak, budget float64) attackResult {
		return attackResult{Name: attackSlowReaders, Attacker: attackerReport{Sessions: 100, Figures: map[string]float64{figQueuedPeak: peak, figOutboundBudget: budget}}}
	}
	// want gives the status of the targets whose name starts with each
	// key; every other target must be n/a.
	// The unlimited-frames target is judged against a baseline p99 of
	// 0.6 ms: at most 1.2 ms.
	flood := func(p99 float64) attackResult {
		return attackResult{Name: attackUnlimitedFrames, Honest: honestReport{Latency: &report.LatencySummary{P99: p99}}}
	}
	churn := func(open bool, errs ...string) attackResult {
		return attackResult{Name: attackTokenChurn, Attacker: attackerReport{ErrorFrames: errs, Figures: map[string]float64{figOpenAtEnd: b2f(open)}}}
	}
	// pflood received n flood messages in 10 s: against 60/s the bound
	// is 11 windows of 66.
	pflood := func(n float64) attackResult {
		return attackResult{Name: attackPrincipalFlood, Seconds: 10, Attacker: attackerReport{Figures: map[string]float64{figPrincipalSent: 2000, figPrincipalReceived: n}}}
	}
	// loop completed addr and principal CONNECTs in 70 s (two windows of
	// a minute: at most 2 × 15 each), another address let in or not.
	loop := func(addr, principal float64, control bool) attackResult {
		return attackResult{Name: attackReconnectLoop, Attacker: attackerReport{Figures: map[string]float64{
			figLoopAddrCompleted: addr, figLoopPrincipalCompleted: principal, figLoopControl: b2f(control), figLoopSeconds: 70}}}
	}
	// subChurn kept delivered of 100 honest messages and lost gone
	// subscribers.
	subChurn := func(delivered int64, gone int) attackResult {
		return attackResult{Name: attackSubChurn, Honest: honestReport{Subscribers: 3, Disconnected: gone, Expected: 100, Delivered: delivered},
			ServerFrames: &scrape.FrameCounts{Received: 300, Passed: 200, Dropped: 100}}
	}
	// idle held 1,000 connections for secs seconds (against a 90 s idle
	// timeout), open of them at the end, the server's RSS grown by
	// growth.
	idle := func(secs float64, open int, growth int64) attackResult {
		return attackResult{Name: attackHTTPIdle, Seconds: secs, Server: serverUsage{Source: "proc", RSSBefore: 40 * mb, RSSPeak: 40*mb + growth},
			Attacker: attackerReport{Sessions: 1000, Open: open}}
	}
	// bomb sent bombs, refused of them with 1009, the server's RSS
	// growing by growth.
	bomb := func(sent, refused float64, growth int64) attackResult {
		return attackResult{Name: attackDeflateBomb, Server: serverUsage{Source: "proc", RSSBefore: 20 * mb, RSSPeak: 20*mb + growth},
			Attacker: attackerReport{Figures: map[string]float64{figBombsSent: sent, figBombs1009: refused, figBombWireBytes: 50_000, figBombInflated: 51e6}}}
	}
	tests := []struct {
		name    string
		cap     int
		attacks []attackResult
		want    map[string]string
	}{
		{"nothing run", 0, nil, nil},
		{"under the bounds", 5, []attackResult{
			withRSS(attackReceipts, 15*mb, 40*mb), withRSS(attackTxFill, 20*mb, 100*mb),
			{Name: attackCommitBurst, Honest: honestReport{Subscribers: 3}},
			{Name: attackUTF8, Honest: honestReport{Subscribers: 3}},
			perIP(99), silent(attackSilent, 0), silent(attackSilentHB, 0), forge(40, 3, 0), appFill(0, 64*mb), slow(260*mb, 256*mb),
			flood(1.1), churn(true, "too many token checks"), pflood(11 * 66),
			{Name: attackRelayInject, Honest: honestReport{Subscribers: 3}}, loop(30, 30, true),
			subChurn(99, 0), idle(10, 1000, 16*mb), bomb(50, 50, 2*mb),
		}, map[string]string{"deflate-bomb": "pass", "sub-churn": "pass", "http-idle": "pass", "reconnect-loop": "pass", "app-stream-fill": "pass", "slow-readers": "pass", "receipts": "pass", "tx-fill": "pass", "honest subscribers stay connected through commit-burst": "pass",
			"honest subscribers stay connected through utf8": "pass", "sessions-per-ip": "pass", "silent, silent-hb": "pass", "user-forge": "pass",
			"unlimited-frames": "pass", "token-churn": "pass", "relay-inject": "pass", "principal-flood": "pass"}},
		{"over the bounds", 5, []attackResult{
			withRSS(attackReceipts, 15*mb, 64*mb), withRSS(attackTxFill, 20*mb, 300*mb),
			{Name: attackCommitBurst, Honest: honestReport{Subscribers: 3, Disconnected: 1, Disconnects: []string{"subscriber 0: closed 1008 slow consumer"}}},
			{Name: attackUTF8, Honest: honestReport{Subscribers: 3, Disconnected: 3}},
			perIP(101), silent(attackSilent, 0), silent(attackSilentHB, 3), forge(40, 40, 1), appFill(1, 10*mb), slow(500*mb, 256*mb),
			flood(1.3), churn(false, "too many token checks"), pflood(11*66 + 1),
			{Name: attackRelayInject, Honest: honestReport{Subscribers: 3, Foreign: 40}}, loop(10, 31, true),
			subChurn(98, 0), idle(10, 1000, 64*mb), bomb(50, 49, 2*mb),
		}, map[string]string{"deflate-bomb": "fail", "sub-churn": "fail", "http-idle": "fail", "reconnect-loop": "fail", "app-stream-fill": "fail", "slow-readers": "fail", "receipts": "fail", "tx-fill": "fail", "honest subscribers stay connected through commit-burst": "fail",
			"honest subscribers stay connected through utf8": "fail", "sessions-per-ip": "fail", "silent, silent-hb": "fail", "user-forge": "fail",
			"unlimited-frames": "fail", "token-churn": "fail", "relay-inject": "fail", "principal-flood": "fail"}},
		{"could not run", 5, []attackResult{
			{Name: attackReceipts, Error: "BEGIN: refused"}, {Name: attackUTF8, Error: "refused"}, {Name: attackPerIP, Error: "refused"},
			{Name: attackUserForge, Error: "refused"}, {Name: attackSilentHB, Error: "refused"}, {Name: attackAppFill, Error: "refused"},
			{Name: attackSlowReaders, Error: "refused"}, {Name: attackTokenChurn, Error: "token-churn needs -jwt-secret"},
			{Name: attackRelayInject, Error: "needs -redis-url"}, {Name: attackPrincipalFlood, Error: "principal-flood needs -jwt-secret"}, {Name: attackReconnectLoop, Error: "refused"},
		}, nil},
		{"reconnect loop seen from one address", 5, []attackResult{loop(10, 10, false)}, nil},
		{"idle connections past the idle timeout", 5, []attackResult{idle(100, 0, 64*mb), subChurn(100, 1)},
			map[string]string{"http-idle": "pass", "sub-churn": "fail"}},
		{"idle connections left open past the idle timeout", 5, []attackResult{idle(100, 1, 0)}, map[string]string{"http-idle": "fail"}},
		{"bombs refused but RSS grew by one", 5, []attackResult{bomb(50, 50, 51*mb)}, map[string]string{"deflate-bomb": "fail"}},
		{"no compression negotiated", 5, []attackResult{{Name: attackDeflateBomb, Attacker: attackerReport{Figures: map[string]float64{figBombNoOffer: 1}}}}, nil},
		{"not measured, cap not known", 0, []attackResult{
			{Name: attackReceipts}, {Name: attackTxFill}, perIP(1000), {Name: attackSlowReaders}, {Name: attackUnlimitedFrames},
			{Name: attackAppFill, Attacker: attackerReport{Figures: map[string]float64{figHonestAppSent: 3, figHonestAppTaken: 3}}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &abuseReport{Attacks: tt.attacks}
			r.judge(&abuseConfig{sendLimit: 20, sessionCap: tt.cap, httpIdleTimeout: 90 * time.Second, principalLimit: 60, appTotalBytes: defaultAppTotalBytes, slowMessage: defaultSlowMessage,
				floodSessions: 4, baselineP99: 0.6, reconnectLimit: 15, reconnectWindow: time.Minute})
			seen := map[string]bool{}
			for _, tg := range r.Targets {
				want := "n/a"
				for prefix, st := range tt.want {
					if strings.HasPrefix(tg.Target, prefix) {
						want = st
						seen[prefix] = true
					}
				}
				if tg.Status != want {
					t.Errorf("%s = %s (%s), want %s", tg.Target, tg.Status, tg.Detail, want)
				}
			}
			for prefix := range tt.want {
				if !seen[prefix] {
					t.Errorf("no target starts with %q", prefix)
				}
			}
		})
	}
}

// TestEveryAttackJudged: every attack the tool runs is named by a target
// of the judge, so none ends without a verdict.
func TestEveryAttackJudged(t *testing.T) {
	var r abuseReport
	r.judge(&abuseConfig{sendLimit: 20, sessionCap: 100, httpIdleTimeout: time.Minute})
	named := map[string]bool{}
	for _, tg := range r.Targets {
		for _, w := range strings.FieldsFunc(tg.Target, func(c rune) bool { return c == ' ' || c == ',' || c == ':' }) {
			named[w] = true
		}
	}
	for _, a := range allAttacks {
		if !named[a] {
			t.Errorf("attack %s has no target", a)
		}
	}
}

// TestSessionCapDefault: without -session-cap the sessions-per-ip target
// is judged against the cap a server without -policy applies, so the
// default run gives a verdict, not n/a.
func TestSessionCapDefault(t *testing.T) {
	var cfg abuseConfig
	if err := cfg.FlagSet(io.Discard).Parse(nil); err != nil {
		t.Fatal(err)
	}
	z, _ := policy.Default().Zone(policy.ZoneHandshake)
	if z.MaxConnections == 0 || cfg.sessionCap != z.MaxConnections {
		t.Fatalf("-session-cap default %d, want the default policy's max_connections %d", cfg.sessionCap, z.MaxConnections)
	}
	r := abuseReport{Attacks: []attackResult{{Name: attackPerIP, Attacker: attackerReport{Figures: map[string]float64{figSessionsHeld: 100, figDeliveredEnd: 500}}}}}
	r.judge(&cfg)
	for _, tg := range r.Targets {
		if strings.HasPrefix(tg.Target, attackPerIP) && tg.Status != "pass" {
			t.Errorf("%s: %s (%s), want pass against %d × %d", tg.Target, tg.Status, tg.Detail, cfg.sessionCap, cfg.sendLimit)
		}
	}
}

func TestUsagePeak(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := &usageSampler{src: scrape.Usage{PID: 1}}
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
