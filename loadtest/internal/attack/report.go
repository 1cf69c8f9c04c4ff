package attack

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// abuseReport is the outcome of the abuse scenario.
type abuseReport struct {
	// SendLimit and SessionCap are what the sessions-per-ip target is
	// judged with (-send-limit, -session-cap: by default the default
	// policy's max_connections; 0: not judged).
	SendLimit  int            `json:"send_limit"`
	SessionCap int            `json:"session_cap"`
	Attacks    []attackResult `json:"attacks"`
	// NotRun lists attacks asked for that an interrupt left out.
	NotRun  []string       `json:"not_run,omitempty"`
	Targets []targetResult `json:"targets"`
}

// attackResult is one attack and what it did.
type attackResult struct {
	Name string `json:"name"`
	// Seconds is the attack's load period as run.
	Seconds     float64 `json:"seconds"`
	Interrupted bool    `json:"interrupted"`
	// Error says why the attack could not be run; nothing else is set
	// then.
	Error    string         `json:"error,omitempty"`
	Server   serverUsage    `json:"server"`
	Honest   honestReport   `json:"honest"`
	Attacker attackerReport `json:"attacker"`
	// ServerFrames is what the server processed while the attack ran
	// (its frame counters' increase, every session's, the honest room's
	// included), as opposed to the attacker's figures, which count what
	// the client wrote to its sockets; nil without the metrics page.
	ServerFrames *scrape.FrameCounts `json:"server_frames,omitempty"`
	// began and ended bound the load period, for the chart's marks.
	began, ended time.Time
}

// honestReport is what the honest room saw during one attack.
type honestReport struct {
	Subscribers int `json:"subscribers"`
	Publishers  int `json:"publishers"`
	// Sent counts honest SEND frames; Expected is Sent × Subscribers;
	// Delivered counts honest MESSAGE frames read.
	Sent          int64                  `json:"sent"`
	Expected      int64                  `json:"expected"`
	Delivered     int64                  `json:"delivered"`
	DeliveryRatio float64                `json:"delivery_ratio"`
	Latency       *report.LatencySummary `json:"latency,omitempty"`
	// Disconnected counts subscribers whose connection ended during the
	// attack: closed by the server, lost, or failed by the subscriber
	// itself on a text message that is not UTF-8, as a browser does.
	// Disconnects says how, one line per subscriber.
	Disconnected int      `json:"disconnected"`
	Disconnects  []string `json:"disconnects,omitempty"`
	// Foreign counts the attack's messages that reached honest
	// subscribers; Errors counts failed connections and ERROR frames on
	// the honest side.
	Foreign int64 `json:"foreign"`
	Errors  int64 `json:"errors"`
}

// attackerReport is what became of the attacker.
type attackerReport struct {
	// Sessions is how many sessions (or HTTP connections) the attack
	// opened; Refused counts opening attempts the server refused.
	Sessions int   `json:"sessions"`
	Refused  int64 `json:"refused,omitempty"`
	// FramesWritten counts the STOMP frames (HTTP requests for
	// http-idle) the attack wrote to its sockets without error: a
	// client-side count, which says nothing of what the server read
	// (see attackResult.ServerFrames).
	FramesWritten int64 `json:"frames_written"`
	// ClosedByServer and Open count the sessions at the end of the
	// attack; Closes tallies how the closed ones ended, and ErrorFrames
	// holds a few ERROR messages they got.
	ClosedByServer int            `json:"closed_by_server"`
	Open           int            `json:"open"`
	Closes         map[string]int `json:"closes,omitempty"`
	ErrorFrames    []string       `json:"error_frames,omitempty"`
	// Figures are the attack's own measures (ops per second, messages
	// per second delivered, sessions held, ...), Summary says them in
	// words, and Notes keeps a few errors met on the way.
	Figures map[string]float64 `json:"figures,omitempty"`
	Summary string             `json:"summary,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
}

// targetResult is one target the server is held to.
type targetResult struct {
	Target string `json:"target"`
	// Status is "pass", "fail" or "n/a" (not measured or not run).
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Target bounds.
const (
	receiptsRSSBound = 64 << 20
	txFillRSSBound   = 128 << 20
	// httpIdleConnBound is what one idle keep-alive connection may cost
	// the server in RSS while its idle timeout runs: a socket, its
	// buffers and a goroutine are a few KiB; measured at 16 KiB each
	// for 1,000 connections, so four times that is a leak.
	httpIdleConnBound = 64 << 10
	// subChurnDelivery is the share of the honest room's messages that
	// must arrive while a session churns subscriptions on another topic.
	subChurnDelivery = 0.99
	// bombRSSGrowth bounds the server's RSS growth over the deflate-bomb
	// attack. Each bomb inflates to about 50 MB; a server that bounds
	// inflation holds at most its frame limit (64 KiB) of each, which
	// the allocator's and the collector's own noise hides: 16 MiB is
	// a third of one bomb, and far under the 2.5 GB of fifty.
	bombRSSGrowth = 16 << 20
)

// marks are the chart's marks of the attacks that ran: each load
// period's start, named, and its end, seconds after base.
func (r *abuseReport) marks(base time.Time) []report.Mark {
	var out []report.Mark
	for _, a := range r.Attacks {
		if a.began.IsZero() {
			continue
		}
		out = append(out, report.Mark{At: a.began.Sub(base).Seconds(), Label: a.Name},
			report.Mark{At: a.ended.Sub(base).Seconds()})
	}
	return out
}

// find returns the named attack if it ran.
func (r *abuseReport) find(name string) *attackResult {
	for i := range r.Attacks {
		if r.Attacks[i].Name == name && r.Attacks[i].Error == "" {
			return &r.Attacks[i]
		}
	}
	return nil
}

// judge fills Targets from the attacks that ran.
func (r *abuseReport) judge(cfg *abuseConfig) {
	r.Targets = nil
	add := func(target, status, detail string) {
		r.Targets = append(r.Targets, targetResult{Target: target, Status: status, Detail: detail})
	}
	rssTarget := func(name string, bound int64, target string) {
		a := r.find(name)
		switch {
		case a == nil:
			add(target, "n/a", "not run")
		case a.Server.Source == "":
			add(target, "n/a", "server RSS not measured")
		default:
			status := "pass"
			if a.Server.RSSPeak >= bound {
				status = "fail"
			}
			detail := fmt.Sprintf("peak %.1f MiB (from %.1f MiB, +%.1f MiB) over %.1fs, %d sessions",
				scenario.MiB(a.Server.RSSPeak), scenario.MiB(a.Server.RSSBefore), scenario.MiB(a.Server.RSSPeak-a.Server.RSSBefore), a.Seconds, a.Attacker.Sessions)
			if a.Server.RSSBefore >= bound/2 {
				// A Go server keeps the pages an earlier attack grew for
				// minutes: the peak then says little about this attack.
				detail += fmt.Sprintf("; RSS was already %.1f MiB before it, left by an earlier attack: run -attacks %s alone against a fresh server", scenario.MiB(a.Server.RSSBefore), name)
			}
			add(target, status, detail)
		}
	}
	rssTarget(attackReceipts, receiptsRSSBound, "receipts keeps server RSS under 64 MiB")
	rssTarget(attackTxFill, txFillRSSBound, "tx-fill keeps server RSS under 128 MiB")
	for _, name := range []string{attackCommitBurst, attackUTF8} {
		target := "honest subscribers stay connected through " + name
		a := r.find(name)
		if a == nil {
			add(target, "n/a", "not run")
			continue
		}
		status, detail := "pass", fmt.Sprintf("%d of %d subscribers connected", a.Honest.Subscribers-a.Honest.Disconnected, a.Honest.Subscribers)
		if a.Honest.Disconnected > 0 {
			status = "fail"
			detail += ": " + strings.Join(a.Honest.Disconnects, "; ")
		}
		add(target, status, detail)
	}
	target := "sessions-per-ip delivers at most session cap × send limit"
	switch a := r.find(attackPerIP); {
	case a == nil:
		add(target, "n/a", "not run")
	default:
		held, rate := a.Attacker.Figures[figSessionsHeld], a.Attacker.Figures[figDeliveredEnd]
		detail := fmt.Sprintf("held %.0f sessions from one IP, delivering %.1f msg/s into one subscriber (%.1f× the send limit of %d/s)",
			held, rate, rate/float64(cfg.sendLimit), cfg.sendLimit)
		if cfg.sessionCap == 0 {
			add(target, "n/a", detail+"; -session-cap 0: not judged")
			break
		}
		bound := float64(cfg.sessionCap * cfg.sendLimit)
		status := "pass"
		if rate > bound {
			status = "fail"
		}
		add(target, status, fmt.Sprintf("%s; bound %d × %d = %.0f msg/s", detail, cfg.sessionCap, cfg.sendLimit, bound))
	}
	target = "silent, silent-hb: a 24.8-day heart-beat offer is checked like 0,0"
	switch hb, zero := r.find(attackSilentHB), r.find(attackSilent); {
	case hb == nil || zero == nil:
		add(target, "n/a", "needs silent and silent-hb run")
	default:
		status := "pass"
		if hb.Attacker.Open > zero.Attacker.Open {
			status = "fail"
		}
		add(target, status, fmt.Sprintf("%d of %d silent-hb sessions open at the end, against %d of %d with 0,0",
			hb.Attacker.Open, hb.Attacker.Sessions, zero.Attacker.Open, zero.Attacker.Sessions))
	}
	target = "user-forge: no forged message reaches a user queue unmarked"
	switch a := r.find(attackUserForge); {
	case a == nil:
		add(target, "n/a", "not run")
	default:
		sent, got, unmarked := a.Attacker.Figures[figForgedSent], a.Attacker.Figures[figForgedReceived], a.Attacker.Figures[figForgedUnmarked]
		status := "pass"
		if unmarked > 0 || sent == 0 {
			status = "fail"
		}
		add(target, status, fmt.Sprintf("%.0f forged SENDs, %.0f received, %.0f without the server's sender header", sent, got, unmarked))
	}
	r.judgeSubChurn(add)
	r.judgeHTTPIdle(cfg, add)
	r.judgeIPv6Prefix(cfg, add)
	r.judgeAppFill(cfg, add)
	r.judgeUpgradeFlood(add)
	r.judgeSlowReaders(cfg)
	r.judgeCPU(cfg, add)
	r.judgePrincipalFlood(cfg, add)
	r.judgeReconnectLoop(cfg, add)
	r.judgeRelayInject(add)
	r.judgeDeflateBomb(add)
}

// judgeDeflateBomb: every bomb is closed with 1009 and the server's RSS
// does not grow by a bomb's worth.
func (r *abuseReport) judgeDeflateBomb(add func(target, status, detail string)) {
	target := "deflate-bomb: every bomb closed with 1009, server RSS grows under 16 MiB"
	a := r.find(attackDeflateBomb)
	switch {
	case a == nil:
		add(target, "n/a", "not run")
		return
	case a.Attacker.Figures[figBombNoOffer] > 0:
		add(target, "n/a", "the server negotiated no compression: start it with -compression")
		return
	}
	f := a.Attacker.Figures
	sent, refused := f[figBombsSent], f[figBombs1009]
	detail := fmt.Sprintf("%.0f of %.0f bombs (%.0f bytes inflating to %.0f MB) closed with 1009", refused, sent, f[figBombWireBytes], f[figBombInflated]/1e6)
	status := "pass"
	if sent == 0 || refused < sent {
		status = "fail"
	}
	if a.Server.Source != "" {
		growth := a.Server.RSSPeak - a.Server.RSSBefore
		detail += fmt.Sprintf("; RSS %.1f MiB → peak %.1f MiB (+%.1f MiB)", scenario.MiB(a.Server.RSSBefore), scenario.MiB(a.Server.RSSPeak), scenario.MiB(growth))
		if growth >= bombRSSGrowth {
			status = "fail"
		}
	}
	add(target, status, detail)
}

// judgeSubChurn: a session churning subscriptions on a crowded topic
// costs the honest room on another topic neither subscribers nor
// messages.
func (r *abuseReport) judgeSubChurn(add func(target, status, detail string)) {
	target := fmt.Sprintf("sub-churn: the honest room keeps every subscriber and %.0f%% of its messages", subChurnDelivery*100)
	a := r.find(attackSubChurn)
	if a == nil {
		add(target, "n/a", "not run")
		return
	}
	detail := fmt.Sprintf("%d of %d subscribers connected, %d of %d messages delivered", a.Honest.Subscribers-a.Honest.Disconnected, a.Honest.Subscribers,
		a.Honest.Delivered, a.Honest.Expected)
	if f := a.ServerFrames; f != nil {
		detail += fmt.Sprintf("; the server received %d frames (%d passed, %d dropped)", f.Received, f.Passed, f.Dropped)
	}
	switch {
	case a.Honest.Disconnected > 0:
		add(target, "fail", detail+": "+strings.Join(a.Honest.Disconnects, "; "))
	case a.Honest.Expected == 0 || float64(a.Honest.Delivered) < subChurnDelivery*float64(a.Honest.Expected):
		add(target, "fail", detail)
	default:
		add(target, "pass", detail)
	}
}

// judgeHTTPIdle: idle keep-alive connections are closed once the
// server's idle timeout passed; before that they hold little memory.
func (r *abuseReport) judgeHTTPIdle(cfg *abuseConfig, add func(target, status, detail string)) {
	target := fmt.Sprintf("http-idle: idle connections closed after -http-idle-timeout (%v), each under %d KiB meanwhile", cfg.httpIdleTimeout, httpIdleConnBound>>10)
	a := r.find(attackHTTPIdle)
	if a == nil {
		add(target, "n/a", "not run")
		return
	}
	held := a.Attacker.Sessions
	detail := fmt.Sprintf("%d of %d connections open after %.1fs", a.Attacker.Open, held, a.Seconds)
	if a.Seconds > cfg.httpIdleTimeout.Seconds() {
		status := "pass"
		if a.Attacker.Open > 0 {
			status = "fail"
		}
		add(target, status, detail)
		return
	}
	detail += ", shorter than the idle timeout"
	if a.Server.Source == "" || held == 0 {
		add(target, "n/a", detail+"; server RSS not measured")
		return
	}
	per := float64(a.Server.RSSPeak-a.Server.RSSBefore) / float64(held)
	status := "pass"
	if per >= httpIdleConnBound {
		status = "fail"
	}
	add(target, status, fmt.Sprintf("%s; RSS +%.1f MiB, %.1f KiB per connection", detail, scenario.MiB(a.Server.RSSPeak-a.Server.RSSBefore), per/1024))
}

// judgeRelayInject: nothing published straight into Redis reaches an
// honest subscriber, and the large payloads are dropped by the server.
func (r *abuseReport) judgeRelayInject(add func(target, status, detail string)) {
	target := "relay-inject: nothing published straight into Redis reaches a subscriber"
	a := r.find(attackRelayInject)
	if a == nil {
		add(target, "n/a", "not run (needs -redis-url)")
		return
	}
	f := a.Attacker.Figures
	detail := fmt.Sprintf("%d foreign messages reached %d honest subscribers; %.0f large and %.0f forged payloads injected",
		a.Honest.Foreign, a.Honest.Subscribers, f[figInjectedLarge], f[figInjectedForged])
	if d, ok := f["dropped_too_large"]; ok {
		detail += fmt.Sprintf("; server dropped %.0f too_large, %.0f unsigned, %.0f bad_signature", d, f["dropped_unsigned"], f["dropped_bad_signature"])
	}
	switch {
	case a.Honest.Foreign > 0:
		add(target, "fail", detail+": set -relay-key on every instance")
	case a.Honest.Disconnected > 0:
		add(target, "fail", detail+": "+strings.Join(a.Honest.Disconnects, "; "))
	default:
		add(target, "pass", detail)
	}
}

func (r *abuseReport) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "attack\tseconds\tRSS before MiB\tRSS peak MiB\tgrowth MiB\tCPU s\tcores avg\tcores peak\thonest delivered/expected\thonest p99 ms\thonest disconnected\tattacker\t")
	for _, a := range r.Attacks {
		if a.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t\t\t\t\t\t\t\t\t\tcould not run\t\n", a.Name)
			continue
		}
		rssB, rssP, grow, cpu, avg, peak := "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"
		if s := a.Server; s.Source != "" {
			rssB, rssP = fmt.Sprintf("%.1f", scenario.MiB(s.RSSBefore)), fmt.Sprintf("%.1f", scenario.MiB(s.RSSPeak))
			grow = fmt.Sprintf("%.1f", scenario.MiB(s.RSSPeak-s.RSSBefore))
			cpu, avg, peak = fmt.Sprintf("%.2f", s.CPUSeconds), fmt.Sprintf("%.2f", s.CPUCores), fmt.Sprintf("%.2f", s.CPUCoresPeak)
		}
		p99 := "-"
		if l := a.Honest.Latency; l != nil {
			p99 = fmt.Sprintf("%.1f", l.P99)
		}
		name := a.Name
		if a.Interrupted {
			name += " (interrupted)"
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%d of %d\t%s\t\n",
			name, a.Seconds, rssB, rssP, grow, cpu, avg, peak,
			a.Honest.Delivered, a.Honest.Expected, p99, a.Honest.Disconnected, a.Honest.Subscribers,
			a.Attacker.fate())
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, a := range r.Attacks {
		if a.Error != "" {
			fmt.Fprintf(w, "%s: could not run: %s\n", a.Name, a.Error)
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", a.Name, a.Attacker.Summary)
		if len(a.Attacker.Closes) > 0 {
			fmt.Fprintf(w, "  attacker closes: %s\n", closesText(a.Attacker.Closes))
		}
		for _, e := range a.Attacker.ErrorFrames {
			fmt.Fprintf(w, "  attacker got ERROR: %s\n", e)
		}
		for _, n := range a.Attacker.Notes {
			fmt.Fprintf(w, "  attacker error: %s\n", n)
		}
		for _, d := range a.Honest.Disconnects {
			fmt.Fprintf(w, "  honest %s\n", d)
		}
		if a.Honest.Foreign > 0 {
			fmt.Fprintf(w, "  honest subscribers received %d of the attack's messages\n", a.Honest.Foreign)
		}
		if f := a.ServerFrames; f != nil {
			fmt.Fprintf(w, "  server processed: %d frames received, %d passed, %d dropped (its counters over the attack and the drain; every session, the honest room's included)\n",
				f.Received, f.Passed, f.Dropped)
		}
		if a.Server.Error != "" {
			fmt.Fprintf(w, "  server usage: %s\n", a.Server.Error)
		}
	}
	if len(r.NotRun) > 0 {
		fmt.Fprintf(w, "not run: %s\n", strings.Join(r.NotRun, ", "))
	}
	fmt.Fprintln(w)
	for _, t := range r.Targets {
		fmt.Fprintf(w, "%-4s  %s: %s\n", strings.ToUpper(t.Status), t.Target, t.Detail)
	}
	fmt.Fprintln(w)
}

// fate is the attacker's outcome in a few words for the table.
func (a attackerReport) fate() string {
	s := fmt.Sprintf("%d open, %d closed by server", a.Open, a.ClosedByServer)
	if a.Refused > 0 {
		s += fmt.Sprintf(", %d refused", a.Refused)
	}
	return s
}

// perSecond is n over d in units per second, 0 for an empty d.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return report.Round3(float64(n) / d.Seconds())
}
