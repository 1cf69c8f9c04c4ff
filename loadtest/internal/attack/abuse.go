package attack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
	"github.com/stompgate/stompgate/policy"
)

// abuseConfig are the settings of the abuse scenario.
type abuseConfig struct {
	scenario.Common
	attacks        string
	sampleInterval time.Duration

	// Honest traffic, running through every attack.
	honestSubs  int
	honestPubs  int
	honestRate  float64
	honestRead  int64
	honestBytes int

	// What the targets are judged against.
	sendLimit       int
	sessionCap      int
	httpIdleTimeout time.Duration // the server's -http-idle-timeout, for http-idle

	// Attack sizes.
	receiptsMessage   int
	commitSessions    int
	commitAfter       time.Duration
	commitBody        int
	txSessions        int
	txBody            int
	churnSubs         int
	httpConns         int
	httpPath          string
	silentSessions    int
	perIPRate         float64
	ipv6Addresses     int     // ipv6-prefix: workers, each on fresh addresses
	handshakeRate     float64 // the server's handshake rate, r/s, for ipv6-prefix
	handshakeBurst    int     // and its burst
	appSessions       int
	appBody           int
	appTotalBytes     int64
	redisURL          string
	floodConns        int
	slowReaders       int
	slowPublishers    int
	slowMessage       int
	slowReadRate      int
	slowReadBuffer    int
	floodSessions     int
	baselineP99       float64
	jwtSecret         string
	principalSessions int
	principalLimit    int
	injectSize        int
	injectRate        float64
	loopInterval      time.Duration
	reconnectLimit    int           // the server's -reconnect-limit, for the reconnect-loop target
	reconnectWindow   time.Duration // and its -reconnect-window
	bombs             int           // deflate-bomb: bombs sent, one session each
}

// The attacks, in the order they run.
const (
	attackReceipts        = "receipts"
	attackCommitBurst     = "commit-burst"
	attackTxFill          = "tx-fill"
	attackUTF8            = "utf8"
	attackSubChurn        = "sub-churn"
	attackHTTPIdle        = "http-idle"
	attackSilent          = "silent"
	attackPerIP           = "sessions-per-ip"
	attackUserForge       = "user-forge"
	attackSilentHB        = "silent-hb"
	attackIPv6Prefix      = "ipv6-prefix"
	attackAppFill         = "app-stream-fill"
	attackUpgradeFlood    = "upgrade-flood"
	attackSlowReaders     = "slow-readers"
	attackUnlimitedFrames = "unlimited-frames"
	attackTokenChurn      = "token-churn"
	attackRelayInject     = "relay-inject"
	attackPrincipalFlood  = "principal-flood"
	attackReconnectLoop   = "reconnect-loop"
	attackDeflateBomb     = "deflate-bomb"
)

var allAttacks = []string{
	attackReceipts,
	attackCommitBurst,
	attackTxFill,
	attackUTF8,
	attackSubChurn,
	attackHTTPIdle,
	attackSilent,
	attackSilentHB,
	attackPerIP,
	attackUserForge,
	attackIPv6Prefix,
	attackAppFill,
	attackUpgradeFlood,
	attackSlowReaders,
	attackUnlimitedFrames,
	attackTokenChurn,
	attackPrincipalFlood,
	attackRelayInject,
	attackReconnectLoop,
	attackDeflateBomb,
}

// Abuse defaults, each with its reason.
const (
	// defaultAttackDuration is long enough for the attacks seen so far to
	// show (receipts took the server to 2.1 GB in 10 s) and short enough
	// that eight of them fit in a few minutes.
	defaultAttackDuration = 10 * time.Second
	// maxAttackDuration bounds -duration-per-attack: a run of eight must
	// end.
	maxAttackDuration = 10 * time.Minute
	// Honest traffic: a few people in one room, talking at about the
	// measured real peak (1.3 SEND/s), reading over a 1 MB/s link (a
	// phone on a good network).
	defaultHonestSubs  = 3
	defaultHonestPubs  = 4
	defaultHonestRate  = 2
	defaultHonestRead  = 1_000_000
	defaultHonestBytes = 100
	// defaultSendLimit is wsserver's default SEND limit per session per
	// second.
	defaultSendLimit = 20
	// defaultHTTPIdleTimeout is wsserver's default -http-idle-timeout:
	// http-idle's connections must be closed once it passed.
	defaultHTTPIdleTimeout = 90 * time.Second
	// Attack sizes as first observed: 60 KB WebSocket messages of
	// receipt-bearing frames; six sessions in transactions for 20 s;
	// ten sessions filling transactions with 60 KB bodies; 2,000
	// subscriptions on the churned topic; 1,000 idle HTTP connections;
	// 20 silent sessions.
	defaultReceiptsMessage = 60_000
	defaultCommitSessions  = 6
	defaultCommitAfter     = 20 * time.Second
	defaultCommitBody      = 1024
	defaultTxSessions      = 10
	defaultTxBody          = 60_000
	defaultChurnSubs       = 2000
	defaultHTTPConns       = 1000
	defaultSilentSessions  = 20
	// defaultPerIPRate is what each session of sessions-per-ip tries to
	// publish: twice the send limit, so the server's limit, not the
	// tool, sets what gets through.
	defaultPerIPRate = 2 * defaultSendLimit
	// defaultIPv6Addresses: five addresses of one /64 at a time, as first
	// observed; defaultHandshakeRate and defaultHandshakeBurst are the
	// server's default handshake policy (3r/s, burst 5).
	defaultIPv6Addresses  = 5
	defaultHandshakeRate  = 3
	defaultHandshakeBurst = 5
	// defaultFloodSessions are the unlimited-frames sessions: four, one
	// of each kind of frame, took the honest p99 from 0.4 to 52-71 ms.
	defaultFloodSessions = 4
	// maxAttackSessions bounds the sessions or connections of one attack.
	maxAttackSessions = 10_000
	// maxAttackBody bounds the body and message sizes: wsserver's frame
	// limit is 64 KiB; a larger server limit is still bounded.
	maxAttackBody = 1 << 20
	// relay-inject: 5 MB payloads as first seen, at ten PUBLISHes a
	// second, one in ten of them large (5 MB/s into Redis, under the 8 MB/s
	// a Pub/Sub client may fall behind by default before Redis drops it).
	defaultInjectSize = 5 << 20
	defaultInjectRate = 10
	// defaultLoopInterval is the pause of a reconnect loop between two
	// turns: 2.5 handshakes a second stays under the default handshake
	// rate (3 r/s), so only a reconnect limit can stop the loop.
	// defaultReconnectLimit and defaultReconnectWindow are wsserver's
	// (15 a minute).
	defaultLoopInterval    = 400 * time.Millisecond
	defaultReconnectLimit  = 15
	defaultReconnectWindow = time.Minute
	// maxInjectSize bounds -inject-size: Redis' own limit on a bulk
	// string is 512 MB; 64 MB is plenty to show a bound.
	maxInjectSize = 64 << 20
)

func (c *abuseConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := scenario.NewFlagSet("abuse", stderr)
	c.Register(fs, defaultAttackDuration)
	fs.Lookup("duration").Usage = "how long each attack runs (same as -duration-per-attack)"
	fs.DurationVar(&c.Duration, "duration-per-attack", defaultAttackDuration, "how long each attack runs; commit-burst runs -commit-after longer")
	fs.StringVar(&c.attacks, "attacks", strings.Join(allAttacks, ","), "comma-separated attacks to run, in this order: "+strings.Join(allAttacks, ", "))
	fs.DurationVar(&c.sampleInterval, "sample-interval", defaultSampleInterval, "how often the server's RSS and CPU are read (from -pid, else from -metrics-url)")

	fs.IntVar(&c.honestSubs, "honest-subscribers", defaultHonestSubs, "honest subscribers in the room, each on its own session")
	fs.IntVar(&c.honestPubs, "honest-publishers", defaultHonestPubs, "honest publishers in the room")
	fs.Float64Var(&c.honestRate, "honest-rate", defaultHonestRate, "SEND frames per second of each honest publisher")
	fs.Int64Var(&c.honestRead, "honest-read-rate", defaultHonestRead, "bytes per second each honest subscriber reads (0: as fast as it can)")
	fs.IntVar(&c.honestBytes, "honest-size", defaultHonestBytes, "honest message body size in bytes")

	fs.IntVar(&c.sendLimit, "send-limit", defaultSendLimit, "the server's SEND limit per session per second: commit-burst stays just under it, and the sessions-per-ip target is judged with it")
	fs.IntVar(&c.sessionCap, "session-cap", defaultSessionCap(), "the server's cap on concurrent sessions per client IP, for the sessions-per-ip target (default: max_connections of the ws_handshake zone in wsserver's default policy, what a server without -policy applies; 0: not judged)")
	fs.DurationVar(&c.httpIdleTimeout, "http-idle-timeout", defaultHTTPIdleTimeout, "the server's -http-idle-timeout, for the http-idle target: an attack longer than it must see every idle connection closed; a shorter one is judged by the memory the connections hold")

	fs.IntVar(&c.receiptsMessage, "receipts-message", defaultReceiptsMessage, "receipts: bytes of receipt-bearing frames packed in each WebSocket message")
	fs.IntVar(&c.commitSessions, "commit-sessions", defaultCommitSessions, "commit-burst: sessions sending inside transactions")
	fs.DurationVar(&c.commitAfter, "commit-after", defaultCommitAfter, "commit-burst: time spent in transactions before every session commits at once")
	fs.IntVar(&c.commitBody, "commit-size", defaultCommitBody, "commit-burst: body size in bytes")
	fs.IntVar(&c.txSessions, "tx-sessions", defaultTxSessions, "tx-fill: sessions filling transactions")
	fs.IntVar(&c.txBody, "tx-size", defaultTxBody, "tx-fill: body size in bytes")
	fs.IntVar(&c.churnSubs, "churn-subscriptions", defaultChurnSubs, "sub-churn: subscriptions held on the churned topic (90 per session)")
	fs.IntVar(&c.httpConns, "http-connections", defaultHTTPConns, "http-idle: keep-alive HTTP connections")
	fs.StringVar(&c.httpPath, "http-path", "/healthz", "http-idle: path of the one GET per connection")
	fs.IntVar(&c.silentSessions, "silent-sessions", defaultSilentSessions, "silent, silent-hb: sessions that negotiate no heart-beats (silent-hb: offer them every 24.8 days) and never read")
	fs.Float64Var(&c.perIPRate, "per-ip-rate", defaultPerIPRate, "sessions-per-ip: SEND frames per second each session tries")
	fs.IntVar(&c.ipv6Addresses, "ipv6-addresses", defaultIPv6Addresses, "ipv6-prefix: concurrent handshakes, each from a fresh address of one /64 told by X-Forwarded-For (the server must trust the tool: -trusted-proxies 127.0.0.0/8)")
	fs.Float64Var(&c.handshakeRate, "handshake-rate", defaultHandshakeRate, "the server's handshake rate per client in r/s, for the ipv6-prefix and upgrade-flood targets")
	fs.IntVar(&c.handshakeBurst, "handshake-burst", defaultHandshakeBurst, "the server's handshake burst, for the ipv6-prefix and upgrade-flood targets")
	fs.IntVar(&c.appSessions, "app-sessions", defaultAppSessions, "app-stream-fill: sessions sending app SENDs at the send limit at once (each ended one is replaced)")
	fs.IntVar(&c.appBody, "app-size", defaultAppBody, "app-stream-fill: body size in bytes")
	fs.Int64Var(&c.appTotalBytes, "app-stream-total-bytes", defaultAppTotalBytes, "the server's -app-stream-total-bytes, what app-stream-fill's Redis growth is judged against")
	fs.StringVar(&c.redisURL, "redis-url", "", "the server's Redis, redis://host:port/db: app-stream-fill reads its used_memory (empty: not measured); relay-inject publishes into it directly (the server started with -relay redis)")
	// 5,000 connections from one address, as first observed.
	fs.IntVar(&c.floodConns, "flood-connections", 5000, "upgrade-flood: keep-alive connections of the flooding address")
	fs.IntVar(&c.slowReaders, "slow-readers", defaultSlowReaders, "slow-readers: sessions reading slowly, each on a topic of its own")
	fs.IntVar(&c.slowPublishers, "slow-publishers", defaultSlowPublishers, "slow-readers: sessions publishing at -send-limit to the readers' topics in turn")
	fs.IntVar(&c.slowMessage, "slow-size", defaultSlowMessage, "slow-readers: message body size in bytes")
	fs.IntVar(&c.slowReadRate, "slow-read-rate", defaultSlowReadRate, "slow-readers: bytes per second each reader reads")
	fs.IntVar(&c.slowReadBuffer, "slow-read-buffer", defaultSlowReadBuffer, "slow-readers: socket receive buffer of each reader in bytes")
	fs.IntVar(&c.floodSessions, "flood-sessions", defaultFloodSessions, "unlimited-frames: sessions flooding ACKs, EOLs, empty continuation fragments and dropped SENDs, one kind each in turn (0: none, for the honest baseline)")
	fs.Float64Var(&c.baselineP99, "baseline-p99", 0, "unlimited-frames: the honest p99 in ms without flooders (a run with -flood-sessions 0); the target is 2× it (0: not judged)")
	fs.StringVar(&c.jwtSecret, "jwt-secret", "", "token-churn, principal-flood: the server's -jwt-secret, to sign HS256 tokens of one principal")
	fs.IntVar(&c.principalSessions, "principal-sessions", defaultPrincipalSessions, "principal-flood: sessions of one principal, each publishing at -send-limit")
	fs.IntVar(&c.principalLimit, "principal-send-limit", defaultPrincipalLimit, "the server's -principal-send-limit per 1 s window, what principal-flood's delivery is judged against (0: not judged)")
	fs.IntVar(&c.injectSize, "inject-size", defaultInjectSize, "relay-inject: bytes of the large payloads")
	fs.Float64Var(&c.injectRate, "inject-rate", defaultInjectRate, "relay-inject: PUBLISHes per second, one in ten large")
	fs.DurationVar(&c.loopInterval, "loop-interval", defaultLoopInterval, "reconnect-loop: pause between one loop's reconnects (with -jwt-secret a second loop connects as one principal from a new address each time)")
	fs.IntVar(&c.reconnectLimit, "reconnect-limit", defaultReconnectLimit, "the server's -reconnect-limit, what reconnect-loop is judged against (0: not judged)")
	fs.DurationVar(&c.reconnectWindow, "reconnect-window", defaultReconnectWindow, "the server's -reconnect-window, for the reconnect-loop target")
	fs.IntVar(&c.bombs, "bombs", defaultBombs, "deflate-bomb: compressed messages of about 54 KB inflating to 56 MB, each from a session of its own (the server started with -compression)")
	return fs
}

// attackList returns the attacks asked for, in the order of allAttacks.
func (c *abuseConfig) attackList() ([]string, error) {
	asked := splitComma(c.attacks)
	for _, a := range asked {
		if !slices.Contains(allAttacks, a) {
			return nil, fmt.Errorf("-attacks: unknown attack %q (known: %s)", a, strings.Join(allAttacks, ", "))
		}
	}
	var out []string
	for _, a := range allAttacks {
		if slices.Contains(asked, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-attacks %q: no attack", c.attacks)
	}
	return out, nil
}

func splitComma(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *abuseConfig) Validate() error {
	if _, err := c.attackList(); err != nil {
		return err
	}
	count := func(name string, v int) error {
		if v <= 0 || v > maxAttackSessions {
			return fmt.Errorf("-%s %d: must be in [1, %d]", name, v, maxAttackSessions)
		}
		return nil
	}
	size := func(name string, v, least int) error {
		if v < least || v > maxAttackBody {
			return fmt.Errorf("-%s %d: must be in [%d, %d]", name, v, least, maxAttackBody)
		}
		return nil
	}
	for _, err := range []error{
		count("honest-subscribers", c.honestSubs), count("honest-publishers", c.honestPubs),
		count("commit-sessions", c.commitSessions), count("tx-sessions", c.txSessions),
		count("churn-subscriptions", c.churnSubs), count("http-connections", c.httpConns),
		count("silent-sessions", c.silentSessions), count("ipv6-addresses", c.ipv6Addresses),
		count("app-sessions", c.appSessions), count("bombs", c.bombs),
		size("app-size", c.appBody, 1), count("flood-connections", c.floodConns),
		count("slow-readers", c.slowReaders), count("slow-publishers", c.slowPublishers),
		size("slow-size", c.slowMessage, 1),
		size("honest-size", c.honestBytes, 0), size("receipts-message", c.receiptsMessage, 64),
		size("commit-size", c.commitBody, 1), size("tx-size", c.txBody, 1),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case c.appTotalBytes <= 0:
		return fmt.Errorf("-app-stream-total-bytes %d: must be positive", c.appTotalBytes)
	case c.Duration > maxAttackDuration:
		return fmt.Errorf("-duration-per-attack %v: above the maximum %v", c.Duration, maxAttackDuration)
	case c.commitAfter <= 0 || c.commitAfter > maxAttackDuration:
		return fmt.Errorf("-commit-after %v: must be in (0, %v]", c.commitAfter, maxAttackDuration)
	case c.sampleInterval < 10*time.Millisecond:
		return fmt.Errorf("-sample-interval %v: below 10ms", c.sampleInterval)
	case c.honestRate <= 0 || c.honestRate > scenario.MaxRate:
		return fmt.Errorf("-honest-rate %v: must be in (0, %d]", c.honestRate, scenario.MaxRate)
	case c.honestRead < 0:
		return fmt.Errorf("-honest-read-rate %d is negative", c.honestRead)
	case c.sendLimit <= 1:
		return fmt.Errorf("-send-limit %d: must be above 1", c.sendLimit)
	case c.sessionCap < 0:
		return fmt.Errorf("-session-cap %d is negative", c.sessionCap)
	case c.httpIdleTimeout <= 0:
		return fmt.Errorf("-http-idle-timeout %v: must be positive", c.httpIdleTimeout)
	case c.floodSessions < 0 || c.floodSessions > maxAttackSessions:
		return fmt.Errorf("-flood-sessions %d: must be in [0, %d]", c.floodSessions, maxAttackSessions)
	case c.baselineP99 < 0:
		return fmt.Errorf("-baseline-p99 %v is negative", c.baselineP99)
	case c.principalSessions < 1 || c.principalSessions > maxAttackSessions:
		return fmt.Errorf("-principal-sessions %d: must be in [1, %d]", c.principalSessions, maxAttackSessions)
	case c.principalLimit < 0:
		return fmt.Errorf("-principal-send-limit %d is negative", c.principalLimit)
	case c.perIPRate <= 0 || c.perIPRate > scenario.MaxRate:
		return fmt.Errorf("-per-ip-rate %v: must be in (0, %d]", c.perIPRate, scenario.MaxRate)
	case c.handshakeRate <= 0 || c.handshakeRate > scenario.MaxRate:
		return fmt.Errorf("-handshake-rate %v: must be in (0, %d]", c.handshakeRate, scenario.MaxRate)
	case c.handshakeBurst < 0:
		return fmt.Errorf("-handshake-burst %d is negative", c.handshakeBurst)
	case c.slowReadRate <= 0:
		return fmt.Errorf("-slow-read-rate %d: must be positive", c.slowReadRate)
	case c.slowReadBuffer <= 0:
		return fmt.Errorf("-slow-read-buffer %d: must be positive", c.slowReadBuffer)
	case c.injectSize < 1 || c.injectSize > maxInjectSize:
		return fmt.Errorf("-inject-size %d: must be in [1, %d]", c.injectSize, maxInjectSize)
	case c.injectRate <= 0 || c.injectRate > scenario.MaxRate:
		return fmt.Errorf("-inject-rate %v: must be in (0, %d]", c.injectRate, scenario.MaxRate)
	case c.loopInterval <= 0 || c.loopInterval > maxAttackDuration:
		return fmt.Errorf("-loop-interval %v: must be in (0, %v]", c.loopInterval, maxAttackDuration)
	case c.reconnectLimit < 0:
		return fmt.Errorf("-reconnect-limit %d is negative", c.reconnectLimit)
	case c.reconnectWindow <= 0:
		return fmt.Errorf("-reconnect-window %v: must be positive", c.reconnectWindow)
	case !strings.HasPrefix(c.httpPath, "/"):
		return fmt.Errorf("-http-path %q: must start with /", c.httpPath)
	}
	return nil
}

func (c *abuseConfig) Title() string {
	list, _ := c.attackList()
	return fmt.Sprintf("abuse: %s, %v each; honest room of %d publishers at %g SEND/s and %d subscribers",
		strings.Join(list, ", "), c.Duration, c.honestPubs, c.honestRate, c.honestSubs)
}

// RunAbuse is the abuse scenario: each attack in turn against the target,
// while an honest room talks through it.
func RunAbuse(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg abuseConfig
	return scenario.RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*scenario.Report, error) {
		return abuse(ctx, &cfg, stderr)
	})
}

// attack is one way of abusing the server. prepare opens what must exist
// before the clock starts (subscriptions held, transactions begun); run
// attacks until end (or ctx ends), then observes what became of the
// attacker and closes its sessions, all before returning.
type attack interface {
	prepare(ctx context.Context) error
	run(ctx context.Context, start, end time.Time) attackerReport
}

// newAttack builds the named attack.
func newAttack(name string, env *attackEnv) attack {
	switch name {
	case attackReceipts:
		return &receiptsAttack{env: env}
	case attackCommitBurst:
		return &commitBurstAttack{env: env}
	case attackTxFill:
		return &txFillAttack{env: env}
	case attackUTF8:
		return &utf8Attack{env: env}
	case attackSubChurn:
		return &subChurnAttack{env: env}
	case attackHTTPIdle:
		return &httpIdleAttack{env: env}
	case attackSilent:
		return &silentAttack{env: env, heartBeat: "0,0"}
	case attackSilentHB:
		return &silentAttack{env: env, heartBeat: hugeHeartBeat}
	case attackPerIP:
		return &perIPAttack{env: env}
	case attackUserForge:
		return &userForgeAttack{env: env}
	case attackIPv6Prefix:
		return &ipv6PrefixAttack{env: env}
	case attackAppFill:
		return &appFillAttack{env: env}
	case attackUpgradeFlood:
		return &upgradeFloodAttack{env: env}
	case attackSlowReaders:
		return &slowReadersAttack{env: env}
	case attackUnlimitedFrames:
		return &unlimitedFramesAttack{env: env}
	case attackTokenChurn:
		return &tokenChurnAttack{env: env}
	case attackPrincipalFlood:
		return &principalFloodAttack{env: env}
	case attackRelayInject:
		return &relayInjectAttack{env: env}
	case attackDeflateBomb:
		return &deflateBombAttack{env: env}
	case attackReconnectLoop:
		return &reconnectLoopAttack{env: env}
	}
	panic("loadtest: no attack " + name)
}

// period is how long an attack's load period lasts.
func (c *abuseConfig) period(name string) time.Duration {
	if name == attackCommitBurst {
		return c.commitAfter + c.Duration
	}
	return c.Duration
}

func abuse(ctx context.Context, cfg *abuseConfig, stderr io.Writer) (*scenario.Report, error) {
	names, err := cfg.attackList()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cpu0 := procstat.SelfCPU()
	src := scrape.Usage{PID: cfg.PID, URL: cfg.MetricsEndpoint()}
	ar := &abuseReport{SendLimit: cfg.sendLimit, SessionCap: cfg.sessionCap}
	var sources atomic.Int64
	var rss []float64
	interrupted := false
	for _, name := range names {
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		if !cfg.NoProgress {
			fmt.Fprintf(stderr, "%s: %v\n", name, cfg.period(name))
		}
		res, samp, err := runAttack(ctx, cfg, name, src, &sources, stderr)
		if err != nil {
			if ctx.Err() != nil {
				interrupted = true
				break
			}
			// The room or the attack could not be set up (a server that
			// refuses transactions, say): say so and go on.
			ar.Attacks = append(ar.Attacks, attackResult{Name: name, Error: err.Error()})
			continue
		}
		ar.Attacks = append(ar.Attacks, res)
		rss = mergeSeries(rss, samp.rssPerSecond(start))
		if res.Interrupted {
			interrupted = true
			break
		}
	}
	ar.NotRun = append(ar.NotRun, names[len(ar.Attacks):]...)
	ar.judge(cfg)
	elapsed := report.Round3(time.Since(start).Seconds())
	rep := &scenario.Report{
		Scenario:       "abuse",
		Target:         cfg.URL,
		Started:        start,
		LoadSeconds:    elapsed,
		ElapsedSeconds: elapsed,
		Interrupted:    interrupted,
		Abuse:          ar,
		Tool:           scenario.ToolReportOf(procstat.SelfCPU()-cpu0, 0),
		Settings: map[string]any{
			"attacks": names, "duration_per_attack": cfg.Duration.String(),
			"honest_subscribers": cfg.honestSubs, "honest_publishers": cfg.honestPubs,
			"honest_rate": cfg.honestRate, "honest_read_rate": cfg.honestRead,
			"send_limit": cfg.sendLimit, "session_cap": cfg.sessionCap,
			"commit_after": cfg.commitAfter.String(), "sample_interval": cfg.sampleInterval.String(),
		},
	}
	if len(rss) > 0 {
		rep.Series = []report.Series{{Name: "server RSS MiB", Unit: "server RSS, MiB (largest sample each second)", Values: rss, Marks: ar.marks(start)}}
	}
	if src.Kind() == "" {
		rep.Notes = append(rep.Notes, "server RSS and CPU not measured: give -pid, or -metrics-url of a server with process_resident_memory_bytes")
	}
	return rep, nil
}

// mergeSeries folds b (per second since the run began) into a, keeping
// the larger value, and carries the last value over seconds with none.
func mergeSeries(a, b []float64) []float64 {
	for len(a) < len(b) {
		a = append(a, 0)
	}
	for i, v := range b {
		a[i] = max(a[i], v)
	}
	for i := 1; i < len(a); i++ {
		if a[i] == 0 {
			a[i] = a[i-1]
		}
	}
	return a
}

// runAttack runs one attack with a fresh honest room around it: the
// room's sessions open, the server sampler starts, the attack prepares,
// and runner.go's execute runs the room's publishers and the attack
// together, samples progress, drains and measures.
func runAttack(ctx context.Context, cfg *abuseConfig, name string, src scrape.Usage, sources *atomic.Int64, stderr io.Writer) (attackResult, *usageSampler, error) {
	rc := cfg.Common
	rc.Duration = cfg.period(name)
	r := scenario.NewLoadRun(&rc, stderr)
	defer r.CloseAll()
	honest := &load.Class{Name: "honest", Fanout: int64(cfg.honestSubs), Publishers: cfg.honestPubs, Subscribers: cfg.honestSubs}
	r.Classes = []*load.Class{honest}
	room := cfg.TopicPrefix + "room." + name
	honest.Subs = make([]*load.Subscriber, cfg.honestSubs)
	r.SubSetup = func(s *load.Subscriber) { s.ReadBPS, s.Browser, s.StampedOnly = cfg.honestRead, true, true }
	err := scenario.Parallel(ctx, cfg.honestSubs, scenario.DialConcurrency, func(i int) error {
		var err error
		honest.Subs[i], err = r.Subscribe(ctx, honest, "0", room, true)
		return err
	})
	r.SubSetup = nil
	if err != nil {
		return attackResult{}, nil, err
	}
	honest.Pubs = make([]*load.Publisher, cfg.honestPubs)
	err = scenario.Parallel(ctx, cfg.honestPubs, scenario.DialConcurrency, func(i int) error {
		var err error
		honest.Pubs[i], err = r.Publish(ctx, honest, uint32(i), room, cfg.honestBytes)
		return err
	})
	if err != nil {
		return attackResult{}, nil, err
	}

	env := &attackEnv{cfg: cfg, run: r, room: room, d: scenario.NewDialer(&cfg.Common), sources: sources,
		spread: cfg.Spread && scenario.LoopbackTarget(cfg.URL)}
	samp := startSampler(ctx, src, cfg.sampleInterval)
	a := newAttack(name, env)
	if err := a.prepare(ctx); err != nil {
		samp.stop()
		return attackResult{}, nil, err
	}
	var (
		mu           sync.Mutex
		atk          attackerReport
		period0      time.Time
		periodEnd    time.Time
		attackDoneAt time.Time
	)
	framesBefore, framesErr := serverFrames(ctx, cfg.MetricsEndpoint())
	res := r.Execute(ctx, func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup) {
		r.Pace(ctx, honest.Pubs, start, end, cfg.honestRate, wg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := a.run(ctx, start, end)
			mu.Lock()
			atk, period0, periodEnd, attackDoneAt = out, start, end, time.Now()
			mu.Unlock()
		}()
	})
	samp.stop()
	mu.Lock()
	defer mu.Unlock()
	if attackDoneAt.Before(periodEnd) {
		periodEnd = attackDoneAt
	}
	out := attackResult{
		Name:        name,
		Seconds:     report.Round3(periodEnd.Sub(period0).Seconds()),
		Interrupted: res.Interrupted,
		Server:      samp.usage(period0, periodEnd),
		Attacker:    atk,
		Honest:      honestOf(res, honest),
		began:       period0,
		ended:       periodEnd,
	}
	if framesErr == nil {
		if after, err := serverFrames(context.WithoutCancel(ctx), cfg.MetricsEndpoint()); err == nil {
			d := after.Minus(framesBefore)
			out.ServerFrames = &d
		}
	}
	return out, samp, nil
}

// serverFrames reads the server's frame counters from its metrics page
// at url, within scrape.Timeout; an error without one.
func serverFrames(ctx context.Context, url string) (scrape.FrameCounts, error) {
	if url == "" {
		return scrape.FrameCounts{}, errors.New("no metrics endpoint")
	}
	ctx, cancel := context.WithTimeout(ctx, scrape.Timeout)
	defer cancel()
	s, err := scrape.Fetch(ctx, url)
	if err != nil {
		return scrape.FrameCounts{}, err
	}
	if !s.Has(scrape.MetricReceived) {
		return scrape.FrameCounts{}, errors.New("no frame counters on " + url)
	}
	return scrape.FrameCountsOf(s), nil
}

// honestOf reads the honest room's figures from the run's result.
func honestOf(res scenario.LoadResult, honest *load.Class) honestReport {
	var cr report.ClassReport
	for _, c := range res.Classes {
		if c.Name == honest.Name {
			cr = c
		}
	}
	h := honestReport{
		Subscribers: cr.Subscribers, Publishers: cr.Publishers,
		Sent: cr.Sent, Expected: cr.Expected, Delivered: cr.Delivered,
		DeliveryRatio: cr.DeliveryRatio, Errors: cr.Errors, Latency: cr.Latency,
	}
	for i, s := range honest.Subs {
		h.Foreign += s.Foreign.Load()
		if s.Gone.Load() {
			h.Disconnected++
			why := s.Ended
			if s.LastError != "" {
				why += " (ERROR: " + s.LastError + ")"
			}
			h.Disconnects = append(h.Disconnects, "subscriber "+strconv.Itoa(i)+": "+why)
		}
	}
	return h
}

// defaultSessionCap is the per-IP session cap of a wsserver started
// without -policy: max_connections of the ws_handshake zone of its
// default policy (0 when the zone sets none).
func defaultSessionCap() int {
	z, _ := policy.Default().Zone(policy.ZoneHandshake)
	return z.MaxConnections
}
