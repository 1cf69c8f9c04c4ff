package server

import (
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Defaults, each with the reason for its value.
const (
	// DefaultMaxSubscriptions bounds a session's SUBSCRIBEs: a chat or
	// game client holds a handful; a hundred is generous and keeps a
	// session's broker footprint small.
	DefaultMaxSubscriptions = 100
	// DefaultConnectTimeout is how long a WebSocket may stay open without
	// a CONNECT: long enough for a slow mobile client, short enough that
	// idle sockets do not pile up.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHeartBeat is the server's heart-beat in both directions.
	DefaultHeartBeat = 10 * time.Second
	// DefaultHeartBeatTolerance is added to the negotiated incoming
	// interval before a silent client is closed: networks delay frames.
	DefaultHeartBeatTolerance = 5 * time.Second
	// DefaultMaxHeartBeat bounds each part of a client's heart-beat
	// offer. Client libraries offer 4 to 60 s (stomp.js 10 s); a client
	// that offers to send only every few minutes is a dead peer the
	// server would not notice for that long, holding its session, its
	// caps and its subscriptions. Two minutes is twice the longest offer
	// seen in practice.
	DefaultMaxHeartBeat = 2 * time.Minute
	// DefaultOutboundQueue is the per-session outbound queue capacity in
	// frames. At the default send limit of 20/s per publisher a reader
	// that is 1,000 frames behind is not keeping up.
	DefaultOutboundQueue = 1024
	// DefaultOutboundBytes bounds the bytes one session's outbound queue
	// holds, whatever the frame kind (MESSAGE, RECEIPT, ERROR): 4 MiB is
	// 4 s of backlog on a 1 MB/s mobile link, and 64 maximum-size
	// frames; chat and game messages of a few hundred bytes reach the
	// frame bound long before this one.
	DefaultOutboundBytes = 4 << 20
	// DefaultOutboundTotalBytes bounds the bytes queued for writing
	// across all sessions together: 64 MiB is the full DefaultOutboundBytes
	// of 16 stuck readers. Honest readers drain as they are written to
	// and hold a few KiB each, under the 32 KiB step a session is counted
	// by, so only many sessions that stopped reading together reach it. A
	// message fanned out to many sessions is counted once per session,
	// though its bytes are shared, so the count errs towards shedding
	// early, never late. While it bites, the process's RSS runs to about
	// three times it (shed queues are garbage the collector has not yet
	// taken): 187 MiB under the slow-readers attack, against 568 MiB with
	// a 256 MiB bound, whose honest p99 was also 6 to 20 times worse
	// (BENCHMARKS.md).
	DefaultOutboundTotalBytes = 64 << 20
	// DefaultSocketSendBuffer caps each connection's kernel send buffer
	// (SO_SNDBUF). Left to itself, Linux grows the buffer of a socket
	// whose peer does not read up to net.ipv4.tcp_wmem's maximum (4 MiB),
	// kernel memory that no outbound bound sees. 128 KiB still covers
	// 10 Mbit/s over a 100 ms round trip and four write batches.
	DefaultSocketSendBuffer = 128 << 10
	// DefaultWriteTimeout bounds one WebSocket write: a peer that does not
	// drain its socket for this long is gone or too slow.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxTransactions bounds open transactions per session.
	DefaultMaxTransactions = 16
	// DefaultMaxTransactionFrames bounds the SENDs buffered in one
	// transaction; they are held in memory until COMMIT.
	DefaultMaxTransactionFrames = 1000
	// DefaultMaxTransactionBytes bounds the bytes one session holds in
	// all its open transactions together (each SEND counted as its
	// encoding plus a fixed overhead): a game groups a few moves, far
	// below 1 MiB, while 16 transactions of 1,000 maximum-size frames
	// would otherwise hold 1 GiB for one session.
	DefaultMaxTransactionBytes = 1 << 20
	// DefaultControlLimit and DefaultControlWindow are the per-session
	// budget of control frames: SUBSCRIBE, UNSUBSCRIBE, BEGIN, COMMIT,
	// ABORT and any frame that asks for a receipt. A chat or game client
	// subscribes to a handful of destinations when it joins and swaps
	// two or three when it changes rooms; receipts ride on a few of its
	// 1.3 SENDs per second at peak. 100 per 10 s lets a client join
	// dozens of rooms at once, and holds a script to 10 per second.
	DefaultControlLimit  = 100
	DefaultControlWindow = 10 * time.Second
	// DefaultInboundFrames, DefaultInboundBytes and DefaultInboundWindow
	// are the per-session budget of everything a client sends (see
	// Config.InboundFrames). An honest client sends a few frames a
	// second: 1.3 SENDs at its peak, a heart-beat every 10 s, an ACK for
	// what it reads; a room delivering 400 messages a second, each ACKed
	// in a WebSocket message of its own, spends 800 frames. 2,000 frames
	// is 50 times the default send limit's SENDs (each counts twice: its
	// WebSocket frame and its STOMP frame), and holds a flooder that
	// would otherwise push millions a second to well under 1% of a core.
	// 4 MiB is 64 maximum-size (64 KiB) frames, three times what the
	// default send limit passes. A one-second window keeps pauses short
	// and the bursts between them small.
	DefaultInboundFrames = 2000
	DefaultInboundBytes  = 4 << 20
	DefaultInboundWindow = time.Second
	// writeBatchSize is the size at which the writer stops adding frames
	// to one WebSocket message: several frames per message save a syscall
	// each, and STOMP clients parse them as a stream.
	writeBatchSize = 32 << 10

	// DefaultPingInterval is how often a session that negotiated no STOMP
	// heart-beat from its client is sent a WebSocket ping. Browsers and
	// WebSocket libraries answer pings by themselves, so this finds dead
	// peers among clients that never heart-beat. 30 s stays under the
	// 60 s idle timeouts of common proxies and load balancers (nginx
	// proxy_read_timeout), so the pings also keep the path open.
	DefaultPingInterval = 30 * time.Second
	// DefaultPingTimeout is how long a pong may take before the session
	// is ended as dead: a pong is one round trip, and 10 s covers a
	// congested mobile link, as DefaultWriteTimeout does for a write.
	DefaultPingTimeout = 10 * time.Second
)

// Config configures a Server. The zero value works: every zero field takes
// the default named in its comment.
type Config struct {
	// Limits bound decoded frames; zero fields take stompframe's defaults
	// (64 KiB frames, 64 headers, 4 KiB header lines). The WebSocket read
	// limit is set to MaxFrameSize.
	Limits stompframe.Limits
	// MaxSubscriptions per session. Default DefaultMaxSubscriptions;
	// negative is an error.
	MaxSubscriptions int
	// ConnectTimeout is the deadline for CONNECT after the upgrade.
	// Default DefaultConnectTimeout; negative is an error.
	ConnectTimeout time.Duration
	// HeartBeatSend and HeartBeatReceive are the server's heart-beat
	// offer (CONNECTED heart-beat "send,receive"), with STOMP's own
	// meaning of zero: the server cannot send, or does not want,
	// heart-beats in that direction (STOMP 1.2 "Heart-beating"). The
	// zero Config therefore offers none, and sessions whose client sends
	// none are watched with WebSocket pings (PingInterval); wsserver
	// offers DefaultHeartBeat each way. Negative is an error.
	HeartBeatSend, HeartBeatReceive time.Duration
	// MaxHeartBeat bounds each part of a client's CONNECT heart-beat
	// offer: a part above it is treated as 0, none. A client that offers
	// to send heart-beats only every 24 days is checked with WebSocket
	// pings like one that offers none (see PingInterval), and one that
	// asks for them that rarely gets none. Each capped offer is reported
	// to Observer.HeartBeatCapped. Default DefaultMaxHeartBeat; negative
	// is an error.
	MaxHeartBeat time.Duration
	// HeartBeatTolerance is added to the negotiated incoming interval
	// before a silent client is closed. Default
	// DefaultHeartBeatTolerance; negative is an error.
	HeartBeatTolerance time.Duration
	// OutboundQueue and OutboundBytes bound what one session's outbound
	// queue holds, in frames and in bytes (frames the writer has taken
	// but the socket has not yet accepted included). A MESSAGE that does
	// not fit closes the session as a slow consumer; a RECEIPT that does
	// not fit makes the session stop reading until the client has read
	// enough (backpressure). Defaults DefaultOutboundQueue and
	// DefaultOutboundBytes; negative is an error.
	OutboundQueue, OutboundBytes int
	// OutboundTotalBytes bounds what all sessions' outbound queues hold
	// together, counted as OutboundBytes counts them. A delivery that
	// takes the total over it closes the sessions holding the largest
	// queues, with ERROR "slow consumer" and outcome.CloseOutboundBudget, until
	// the total is back under it; a session holding a single frame is
	// never closed for it (it is being written, not falling behind), so
	// the total may pass the bound by up to one frame per session. The
	// publisher never waits. Default DefaultOutboundTotalBytes; negative
	// means no server-wide bound.
	OutboundTotalBytes int
	// SocketSendBuffer is the kernel send buffer (SO_SNDBUF) set on each
	// connection that Listener accepts, so that a peer that does not read
	// holds at most this much kernel memory beyond its outbound queue
	// (Linux reserves twice the value, its bookkeeping included).
	// Default DefaultSocketSendBuffer; negative leaves the kernel's own
	// sizing.
	SocketSendBuffer int
	// WriteTimeout bounds one WebSocket write. Default
	// DefaultWriteTimeout; negative is an error.
	WriteTimeout time.Duration
	// MaxTransactions and MaxTransactionFrames bound transactions per
	// session and SENDs per transaction. Defaults DefaultMaxTransactions
	// and DefaultMaxTransactionFrames; negative is an error.
	MaxTransactions, MaxTransactionFrames int
	// MaxTransactionBytes bounds the bytes held in all open transactions
	// of one session; a SEND that would exceed it ends the session with
	// ERROR "transaction too large". Default DefaultMaxTransactionBytes;
	// negative is an error.
	MaxTransactionBytes int
	// ControlLimit control frames (SUBSCRIBE, UNSUBSCRIBE, BEGIN, COMMIT,
	// ABORT, and any frame with a receipt header) are allowed per
	// ControlWindow (a fixed window) per session; the next one ends the
	// session with ERROR "too many control frames". Defaults
	// DefaultControlLimit and DefaultControlWindow; negative is an error.
	ControlLimit  int
	ControlWindow time.Duration
	// InboundFrames frames and InboundBytes bytes of WebSocket payload
	// may be read from one session per InboundWindow (a fixed window).
	// Frames are counted however they come: WebSocket frames of every
	// kind (continuation fragments, empty ones too, and pings), STOMP
	// frames of every command, and heart-beat EOLs, so that frames no
	// other limit applies to (ACKs, SENDs the send limit drops, EOLs,
	// fragments that never complete a message) cost bounded CPU. A
	// session that spends its budget is not closed: its reader stops
	// reading until the window ends, and TCP holds the client back
	// (counted by InputObserver). Defaults DefaultInboundFrames,
	// DefaultInboundBytes and DefaultInboundWindow; negative is an
	// error.
	InboundFrames, InboundBytes int
	InboundWindow               time.Duration
	// OriginPatterns are host patterns (path.Match syntax, matched without
	// regard to case against the Origin's host, or against scheme://host
	// when the pattern holds "://") of cross-origin pages allowed to
	// connect. Empty: only same-origin browsers (and non-browser clients,
	// which send no Origin).
	OriginPatterns []string
	// Chain is the inbound interceptor chain. Nil: an empty chain (every
	// frame passes, sessions are anonymous).
	Chain *interceptor.Chain
	// Broker delivers messages. Nil: a new in-process broker.
	Broker *broker.Broker
	// Relay, if not nil, also receives every message published here, for
	// delivery on other instances. Nil: single instance.
	Relay Relay
	// Observer is told about session events for metrics. Nil: none.
	Observer Observer
	// Logger receives state changes (sessions closed for a reason other
	// than a normal disconnect, shutdown). Nil means slog.Default().
	Logger *slog.Logger
	// Name is the CONNECTED server header. Default "stompgate".
	Name string

	// PingInterval is how often a session whose client sends no STOMP
	// heart-beats (its CONNECT offered none, or the server wants none)
	// gets a WebSocket ping. Heart-beating sessions are checked by their
	// heart-beats instead. Default DefaultPingInterval; negative disables
	// pings.
	PingInterval time.Duration
	// PingTimeout is how long the server waits for the pong before it
	// ends the session at once (no close handshake: the peer is gone) as
	// outcome.ClosePingTimeout. Default DefaultPingTimeout; negative is an error.
	PingTimeout time.Duration

	// ClientIP returns the client's address for a WebSocket upgrade
	// request, as a handshake limiter in front found it (behind trusted
	// proxies, the address they forwarded); it becomes the session's
	// interceptor.Session.RemoteIP, which limits and bans key on. A false
	// answer, or a nil ClientIP, means the peer address of the request's
	// RemoteAddr. cmd/wsserver sets it to read clientip.AddrFrom.
	ClientIP func(r *http.Request) (netip.Addr, bool)

	// AppPrefix starts the app destinations: a SEND there goes to
	// AppHandler instead of the broker (see AppHandler for the contract).
	// Default DefaultAppPrefix.
	AppPrefix string
	// AppHandler receives the app messages. Nil: an app SEND ends its
	// session with ERROR "no backend configured".
	AppHandler AppHandler
	// AppTimeout bounds one AppHandler call. Default DefaultAppTimeout;
	// negative is an error.
	AppTimeout time.Duration

	// Destinations returns the options of a destination (a policy's
	// rules): latest-value delivery and a cap on its subscribers. It is
	// called once per SUBSCRIBE, on the session's reader, with the
	// destination the client named ("/user/queue/<name>" for a user
	// destination), and must be safe for concurrent use. A subscription
	// keeps the options it was made with: rules that change apply to
	// later SUBSCRIBEs. The cap counts this server's subscriptions of the
	// destination (a user destination's, those of one principal), or with
	// SubscriberSlots every instance's. Nil: every destination has the
	// zero options.
	Destinations func(dest string) DestinationOptions
	// SubscriberSlots, if not nil, holds DestinationOptions.MaxSubscribers
	// across every instance sharing it, counted by broker destination.
	// Nil: each server caps its own subscriptions.
	SubscriberSlots SubscriberSlots
	// History keeps the histories of the destinations whose options
	// give one, and answers recoveries. The zero value is off.
	History History
	// Presence keeps the members of the destinations that opt in and
	// serves the presence destinations (see PresenceConfig). The zero
	// value keeps none.
	Presence PresenceConfig
	// RetryRate is the rate, in sessions per second, at which the
	// clients of the sessions a shutdown or a drain ends are meant to
	// come back (to the instances left): the retry-after of their ERROR
	// frames is drawn over a window as long as that rate needs for them.
	// Zero means DefaultRetryRate; negative is an error.
	RetryRate float64
	// RetryAfterMax bounds that window and every retry-after the server
	// announces. Zero means DefaultRetryAfterMax; negative is an error.
	RetryAfterMax time.Duration

	// Compression configures permessage-deflate. The zero value
	// negotiates none (see Compression).
	Compression Compression

	// Tracer records spans of CONNECTs, SUBSCRIBEs, SENDs and deliveries
	// (see Tracer). Nil: none, at the cost of a nil check per frame.
	Tracer Tracer
}

// Relay carries messages that passed the chain to other instances. The
// relay learns which destinations have local subscribers through the
// broker's Hooks, and delivers messages from other instances with
// Broker.Publish.
type Relay interface {
	// Publish hands m to the relay without blocking; the relay batches.
	Publish(m *broker.Message)
}

// Observer receives the server's session events. metrics.Metrics
// implements it.
type Observer interface {
	// Handshake reports how a WebSocket upgrade request that reached the
	// server ended: one of the Handshake* values.
	Handshake(result *outcome.Handshake)
	SessionOpened()
	SessionClosed(reason *outcome.Close)
	Delivered(destination string, n int)
	SlowConsumerDisconnect()
	ProtocolErrorClose(kind string)
	Panic()
	// ReaderPaused reports that a session's reader stopped reading
	// because the session's own replies filled its outbound bounds; it
	// resumes when the client reads them.
	ReaderPaused()
	// HeartBeatCapped reports a CONNECT whose heart-beat offer had a
	// part above Config.MaxHeartBeat, treated as none.
	HeartBeatCapped()
	// SessionCompressed reports a session, also reported to
	// SessionOpened, that negotiated permessage-deflate.
	SessionCompressed()
}

type nopObserver struct{}

func (nopObserver) Handshake(*outcome.Handshake) {}
func (nopObserver) SessionOpened()               {}
func (nopObserver) SessionClosed(*outcome.Close) {}
func (nopObserver) Delivered(string, int)        {}
func (nopObserver) SlowConsumerDisconnect()      {}
func (nopObserver) ProtocolErrorClose(string)    {}
func (nopObserver) Panic()                       {}
func (nopObserver) ReaderPaused()                {}
func (nopObserver) HeartBeatCapped()             {}
func (nopObserver) SessionCompressed()           {}

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	c.Limits = c.Limits.WithDefaults()
	if err := c.Limits.Validate(); err != nil {
		return c, err
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ConnectTimeout", &c.ConnectTimeout, DefaultConnectTimeout},
		{"HeartBeatTolerance", &c.HeartBeatTolerance, DefaultHeartBeatTolerance},
		{"MaxHeartBeat", &c.MaxHeartBeat, DefaultMaxHeartBeat},
		{"WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"ControlWindow", &c.ControlWindow, DefaultControlWindow},
		{"PingTimeout", &c.PingTimeout, DefaultPingTimeout},
		{"AppTimeout", &c.AppTimeout, DefaultAppTimeout},
		{"InboundWindow", &c.InboundWindow, DefaultInboundWindow},
	} {
		if *d.v < 0 {
			return c, configErrorf("%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HeartBeatSend", c.HeartBeatSend}, {"HeartBeatReceive", c.HeartBeatReceive}} {
		if d.v < 0 {
			return c, configErrorf("%s %v is negative (zero means no heart-beat)", d.name, d.v)
		}
	}
	for _, p := range c.OriginPatterns {
		if _, err := path.Match(p, ""); err != nil {
			return c, configErrorf("OriginPatterns %q is not a valid pattern: %v", p, err)
		}
	}
	switch {
	case c.PingInterval == 0:
		c.PingInterval = DefaultPingInterval
	case c.PingInterval < 0:
		c.PingInterval = 0
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxSubscriptions", &c.MaxSubscriptions, DefaultMaxSubscriptions},
		{"OutboundQueue", &c.OutboundQueue, DefaultOutboundQueue},
		{"OutboundBytes", &c.OutboundBytes, DefaultOutboundBytes},
		{"MaxTransactions", &c.MaxTransactions, DefaultMaxTransactions},
		{"MaxTransactionFrames", &c.MaxTransactionFrames, DefaultMaxTransactionFrames},
		{"MaxTransactionBytes", &c.MaxTransactionBytes, DefaultMaxTransactionBytes},
		{"ControlLimit", &c.ControlLimit, DefaultControlLimit},
		{"InboundFrames", &c.InboundFrames, DefaultInboundFrames},
		{"InboundBytes", &c.InboundBytes, DefaultInboundBytes},
	} {
		if *n.v < 0 {
			return c, configErrorf("%s %d is negative", n.name, *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	if err := c.outboundDefaults(); err != nil {
		return c, err
	}
	if err := c.retryDefaults(); err != nil {
		return c, err
	}
	z, err := c.Compression.withDefaults()
	if err != nil {
		return c, err
	}
	c.Compression = z
	if c.Chain == nil {
		c.Chain = interceptor.NewChain(nil)
	}
	if c.Broker == nil {
		c.Broker = broker.New()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AppPrefix == "" {
		c.AppPrefix = DefaultAppPrefix
	}
	if c.Name == "" {
		c.Name = "stompgate"
	}
	if err := c.History.check(); err != nil {
		return c, err
	}
	c.History.replays = newReplayCache(c.OutboundQueue, c.OutboundBytes)
	return c, nil
}
