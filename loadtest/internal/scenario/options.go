package scenario

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"runtime/pprof"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// Common are the settings every scenario shares.
type Common struct {
	URL         string // -url: the STOMP WebSocket endpoint
	host        string
	login       string
	passcode    string
	TopicPrefix string        // -topic-prefix: of every destination used
	MetricsURL  string        // -metrics-url: "" derives it, "off" skips
	PID         int           // -pid: the server process, 0 for none
	Duration    time.Duration // -duration: how long the load runs
	jsonOut     bool
	chart       string
	cpuProfile  string
	// Spread gives each session its own loopback source address (when
	// the target is on loopback), so that the server's per-IP handshake
	// limiter sees one handshake per address.
	Spread bool
	// NoProgress silences the progress line (tests).
	NoProgress bool
	// Compression makes every session offer permessage-deflate as a
	// browser does (the server may keep its window between messages).
	Compression bool
}

// Shared returns c; the scenarios' settings embed it.
func (c *Common) Shared() *Common { return c }

// defaultURL is the target when -url is not given: a wsserver on
// loopback, never anything else.
const defaultURL = "ws://127.0.0.1:8080/ws"

// Register binds the shared flags to c, with defDuration as -duration's
// default.
func (c *Common) Register(fs *flag.FlagSet, defDuration time.Duration) {
	fs.StringVar(&c.URL, "url", defaultURL, "STOMP WebSocket endpoint (ws:// or wss://)")
	fs.StringVar(&c.host, "host", "", "CONNECT host header (empty: the host of -url); RabbitMQ reads it as the virtual host, e.g. -host /")
	fs.StringVar(&c.login, "login", "", "CONNECT login header (empty: none)")
	fs.StringVar(&c.passcode, "passcode", "", "CONNECT passcode header (empty: none); wsserver reads a JWT here")
	fs.StringVar(&c.TopicPrefix, "topic-prefix", "/topic/loadtest.", "prefix of every destination used")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "server's Prometheus endpoint (default: http://<host of -url>:8082/metrics, wsserver's admin listener; \"off\" skips scraping)")
	fs.IntVar(&c.PID, "pid", 0, "server process id on this machine, for its CPU time and RSS from /proc (0: not measured)")
	fs.DurationVar(&c.Duration, "duration", defDuration, "how long the load runs")
	fs.BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&c.chart, "chart", "", "write an SVG chart of the per-second series to this file")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the tool's own CPU profile to this file (go tool pprof)")
	fs.BoolVar(&c.Compression, "compression", false, "offer permessage-deflate in every handshake, as browsers do (the server may keep a window per session); false: offer none")
	fs.BoolVar(&c.Spread, "spread-sources", true, "toward a loopback target, open each session from its own source address in 127.0.0.0/8, so the per-IP handshake limiter does not refuse the sessions")
}

// NewFlagSet returns a flag set for a scenario whose errors and usage go
// to stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("loadtest "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and rejects positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Validate checks the shared settings.
func (c *Common) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("-url %q: %w", c.URL, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return fmt.Errorf("-url %q: scheme must be ws or wss", c.URL)
	}
	if c.Duration <= 0 {
		return fmt.Errorf("-duration %v: must be positive", c.Duration)
	}
	if c.Duration > maxDuration {
		return fmt.Errorf("-duration %v: above the maximum %v", c.Duration, maxDuration)
	}
	if c.PID < 0 {
		return fmt.Errorf("-pid %d is negative", c.PID)
	}
	if c.TopicPrefix == "" {
		return errors.New("-topic-prefix is empty")
	}
	return nil
}

// maxDuration bounds -duration: a forgotten run must still end.
const maxDuration = 24 * time.Hour

// MetricsEndpoint returns the URL to scrape, or "" when scraping is off.
func (c *Common) MetricsEndpoint() string {
	switch c.MetricsURL {
	case "off":
		return ""
	case "":
		return metricsURLFrom(c.URL)
	}
	return c.MetricsURL
}

// wsserverAdminPort is wsserver's default admin listener port, where its
// /metrics is served (on loopback).
const wsserverAdminPort = "8082"

// metricsURLFrom derives the metrics URL from the WebSocket URL:
// wsserver's default admin listener on the same host,
// http://<host>:8082/metrics. A server whose metrics are elsewhere needs
// -metrics-url.
func metricsURLFrom(wsURL string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(u.Hostname(), wsserverAdminPort), Path: "/metrics"}).String()
}

// LoopbackTarget reports whether the URL's host is a loopback address,
// the only kind of target toward which the tool binds extra source
// addresses.
func LoopbackTarget(wsURL string) bool {
	u, err := url.Parse(wsURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostOf returns the host name of the URL for the CONNECT host header.
func hostOf(wsURL string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return ""
	}
	if h, _, err := net.SplitHostPort(u.Host); err == nil {
		return h
	}
	return u.Host
}

// Source address blocks in 127.0.0.0/8, one per scenario so that runs
// close together do not share per-IP limiter state: handshake-storm uses
// 127.0.0.2 onward, idle 127.1.x.y, flood and throughput 127.2.x.y, the
// abuse scenario's attackers 127.3.x.y (its honest room uses blockLoad),
// reconnect-storm's moving clients 127.4.x.y and its untouched sessions
// 127.5.x.y.
const (
	blockStorm = 0
	blockIdle  = 1
	blockLoad  = 2
	BlockAbuse = 3 // the abuse scenario's attackers
	// blockReconnect and blockUntouched are reconnect-storm's.
	blockReconnect = 4
	blockUntouched = 5
	// MaxSources is how many addresses one block holds.
	MaxSources = 254 * 256
)

// SourceAddr returns the n-th loopback source address of a block:
// 127.block.(n/254).(n%254+1). Linux routes all of 127.0.0.0/8 to the
// loopback interface, so any of them can be bound without setup.
func SourceAddr(block, n int) netip.Addr {
	n %= MaxSources
	return netip.AddrFrom4([4]byte{127, byte(block), byte(n / 254), byte(n%254 + 1)})
}

// startProfile starts the CPU profile asked for with -cpuprofile and
// returns the function that stops it.
func (c *Common) startProfile() (stop func(), err error) {
	if c.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(c.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// NewDialer returns a dialer for the target the shared settings name.
func NewDialer(c *Common) *client.Dialer {
	host := c.host
	if host == "" {
		host = hostOf(c.URL)
	}
	d := &client.Dialer{URL: c.URL, Host: host, Login: c.login, Passcode: c.passcode}
	if c.Compression {
		d.Compression = websocket.CompressionContextTakeover
	}
	return d
}
