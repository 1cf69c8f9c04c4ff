package scenario

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// roomsConfig are the settings of the rooms scenario.
type roomsConfig struct {
	Common
	sessions  int
	roomSize  int
	rate      float64
	size      int
	body      string
	heartBeat time.Duration
	measure   roomsMeasure
}

// Rooms defaults, from the measured usage of the party game the server
// was built for: teams of up to 9 players in a room, a player peaking at
// 1.3 frames per second, stomp.js's 10 s heart-beats.
const (
	defaultRoomsSessions = 1000
	defaultPlayers       = 9
	defaultPlayerRate    = 1.3
	defaultRoomsHB       = 10 * time.Second
	// minHeartBeat bounds -heart-beat from below: the EOLs go out in
	// heartBeatSlots slots per interval, each a tick of its own.
	minHeartBeat = 100 * time.Millisecond
)

func (c *roomsConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("rooms", stderr)
	c.Register(fs, 20*time.Second)
	fs.IntVar(&c.sessions, "sessions", defaultRoomsSessions, "sessions (players), each subscribed to its room and publishing to it")
	fs.IntVar(&c.roomSize, "room-size", defaultPlayers, "players per room; the last room holds the remainder")
	fs.Float64Var(&c.rate, "rate", defaultPlayerRate, "SEND frames per second of each player, one frame per WebSocket message")
	fs.IntVar(&c.size, "size", defaultSize, fmt.Sprintf("message body size in bytes (at least the %d-byte time stamp)", load.StampLen))
	fs.StringVar(&c.body, "body", load.BodyPad, "what fills each body after its time stamp: pad ('x's), chat (chat messages as JSON) or game (game-state snapshots as JSON), each message different; compression ratios depend on it")
	fs.DurationVar(&c.heartBeat, "heart-beat", defaultRoomsHB, "heart-beat offered both ways in CONNECT, and how often each session sends an EOL (0: off)")
	c.measure.register(fs)
	return fs
}

func (c *roomsConfig) Validate() error {
	switch {
	case c.sessions <= 0 || c.sessions > maxSessions:
		return fmt.Errorf("-sessions %d: must be in [1, %d]", c.sessions, maxSessions)
	case c.roomSize <= 0:
		return fmt.Errorf("-room-size %d: must be positive", c.roomSize)
	case c.rate <= 0 || c.rate > MaxRate:
		return fmt.Errorf("-rate %v: must be in (0, %d]", c.rate, MaxRate)
	case c.size < 0 || c.size > maxBodySize:
		return fmt.Errorf("-size %d: must be in [0, %d]", c.size, maxBodySize)
	case !slices.Contains(load.BodyKinds, c.body):
		return fmt.Errorf("-body %q: must be one of %v", c.body, load.BodyKinds)
	case c.heartBeat < 0 || (c.heartBeat > 0 && c.heartBeat < minHeartBeat):
		return fmt.Errorf("-heart-beat %v: must be 0 (off) or at least %v", c.heartBeat, minHeartBeat)
	}
	return c.measure.validate(c)
}

func (c *roomsConfig) Title() string {
	hb := "heart-beats off"
	if c.heartBeat > 0 {
		hb = "heart-beats every " + c.heartBeat.String()
	}
	z := ""
	if c.Compression {
		z = ", offering permessage-deflate"
	}
	return fmt.Sprintf("rooms: %d sessions in rooms of %d, each sending %g SEND/s to its room, %d-byte %s bodies, %s%s, %v",
		c.sessions, c.roomSize, c.rate, max(c.size, load.StampLen), c.body, hb, z, c.Duration)
}

// RunRooms is the rooms scenario: the shape of a game or chat backend.
// Sessions are players grouped in rooms; each subscribes to its room's
// topic and publishes to it at -rate, so every message reaches every
// player of the room, the sender included. Publishers send one frame per
// WebSocket message, as a browser does. One player per room records
// latency (every message of its room), which bounds the tool's memory
// at 10,000 sessions.
func RunRooms(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg roomsConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return rooms(ctx, &cfg, stderr)
	})
}

// roomsReport sums up a rooms run over all its rooms.
type roomsReport struct {
	Sessions        int     `json:"sessions"`
	Rooms           int     `json:"rooms"`
	RoomSize        int     `json:"room_size"`
	Rate            float64 `json:"rate"`
	HeartBeatMillis int64   `json:"heart_beat_ms"`
	SetupSeconds    float64 `json:"setup_seconds"`
	// OfferedPerSec is the deliveries per second the load asks for: each
	// player's rate times the players of its room.
	OfferedPerSec float64 `json:"offered_delivered_per_sec"`
	Sent          int64   `json:"sent"`
	Expected      int64   `json:"expected"`
	Delivered     int64   `json:"delivered"`
	DeliveryRatio float64 `json:"delivery_ratio"`
	// SentPerSec and DeliveredPerSec are over the load period; deliveries
	// that came during the drain are not in DeliveredPerSec.
	SentPerSec      float64 `json:"sent_per_sec"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	Errors          int64   `json:"errors"`
	// Latency is measured by one player per room, on every message of
	// its room.
	Latency *report.LatencySummary `json:"latency,omitempty"`
	// ServerCPUPerDeliveredMicros is the server's CPU time over the load
	// and the drain divided by Delivered; ServerCPUCores is that CPU time
	// over the same period's length. Both need -pid or a /metrics page.
	ServerCPUPerDeliveredMicros float64 `json:"server_cpu_per_delivered_us,omitempty"`
	ServerCPUCores              float64 `json:"server_cpu_cores,omitempty"`
	// RSSBefore is the server's resident set before the first session,
	// RSSEnd at the end of the load with every session open;
	// RSSPerSessionKiB is their difference per session.
	RSSSource        string  `json:"rss_source,omitempty"`
	RSSBefore        int64   `json:"rss_before_bytes,omitempty"`
	RSSEnd           int64   `json:"rss_end_bytes,omitempty"`
	RSSPerSessionKiB float64 `json:"rss_per_session_kib,omitempty"`
	roomsSplit
}

func rooms(ctx context.Context, cfg *roomsConfig, stderr io.Writer) (*Report, error) {
	rr := &roomsReport{Sessions: cfg.sessions, RoomSize: cfg.roomSize, Rate: cfg.rate, HeartBeatMillis: cfg.heartBeat.Milliseconds()}
	rss := scrape.Usage{PID: cfg.PID, URL: cfg.MetricsEndpoint()}
	if v, src, err := rss.RSS(ctx); err == nil {
		rr.RSSSource, rr.RSSBefore = src, v
	}

	r := NewLoadRun(&cfg.Common, stderr)
	defer r.CloseAll()
	r.perMessage = 1
	probe := cfg.measure.setup(r)
	if cfg.heartBeat > 0 {
		r.startHeartBeats(cfg.heartBeat)
	}
	full := cfg.sessions / cfg.roomSize
	rest := cfg.sessions % cfg.roomSize
	rr.Rooms = full
	if full > 0 {
		r.Classes = append(r.Classes, &load.Class{Name: "rooms", Fanout: int64(cfg.roomSize), Publishers: full * cfg.roomSize, Subscribers: full * cfg.roomSize})
	}
	if rest > 0 {
		rr.Rooms++
		r.Classes = append(r.Classes, &load.Class{Name: "last room", Fanout: int64(rest), Publishers: rest, Subscribers: rest})
	}
	for _, c := range r.Classes {
		c.Subs = make([]*load.Subscriber, c.Subscribers)
		c.Pubs = make([]*load.Publisher, c.Publishers)
	}
	rr.OfferedPerSec = report.Round3(float64(full*cfg.roomSize*cfg.roomSize+rest*rest) * cfg.rate)

	// Players join from a sampler of their own, so that a long setup
	// (10,000 sessions) shows its progress.
	setupStart := time.Now()
	var joined atomic.Int64
	setup := &report.Sampler{
		Prog:   report.NewProgress(stderr, setupStart, cfg.NoProgress),
		Fields: func() []report.ProgressField { return []report.ProgressField{{Name: "joined", Value: joined.Load()}} },
	}
	setupDone := make(chan struct{})
	var setupWG sync.WaitGroup
	setupWG.Add(1)
	go func() {
		defer setupWG.Done()
		setup.Loop(ctx, setupStart, time.Time{}, setupDone)
	}()
	pads, err := load.Paddings(cfg.body, max(cfg.size, load.StampLen)-load.StampLen)
	if err != nil {
		return nil, err
	}
	err = Parallel(ctx, cfg.sessions, DialConcurrency, func(i int) error {
		room := i / cfg.roomSize
		cls, k := r.Classes[0], i
		if room == full {
			cls, k = r.Classes[len(r.Classes)-1], i-full*cfg.roomSize
		}
		dest := cfg.TopicPrefix + "room." + strconv.Itoa(room)
		if r.dialer.Protocol == client.Centrifugo {
			dest = "room:" + strconv.Itoa(room)
		}
		s, p, err := r.join(ctx, cls, uint32(i), dest, cfg.size, i%cfg.roomSize == 0)
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		if r.dialer.Protocol == client.STOMP {
			p.Pads = pads
		}
		if s.Hist != nil {
			p.Late, p.Write = report.NewHistogram(), report.NewHistogram()
		}
		cls.Subs[k], cls.Pubs[k] = s, p
		joined.Add(1)
		return nil
	})
	close(setupDone)
	setupWG.Wait()
	if joined.Load() > 0 {
		setup.Show(time.Now())
		setup.Prog.End()
	}
	if err != nil {
		return nil, err
	}
	rr.SetupSeconds = report.Round3(time.Since(setupStart).Seconds())

	res := r.Execute(ctx, func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup) {
		probe.start(r, start, cfg.measure.warmup)
		for _, c := range r.Classes {
			r.Pace(ctx, c.Pubs, start, end, cfg.rate, wg)
		}
	})
	rep := &Report{
		Scenario: "rooms",
		Target:   cfg.URL,
		Started:  r.Clock.Base,
		Rooms:    rr,
		Settings: map[string]any{
			"sessions": cfg.sessions, "room_size": cfg.roomSize, "rate": cfg.rate,
			"size": max(cfg.size, load.StampLen), "heart_beat": cfg.heartBeat.String(),
			"duration": cfg.Duration.String(), "frames_per_message": 1,
		},
	}
	rep.fromLoad(res)
	rr.sum(res, r.Classes)
	probe.finish(&rr.roomsSplit, &cfg.measure, r.Classes)
	if srv := rep.Server; srv != nil {
		if srv.RSSSource == rr.RSSSource && srv.RSSBytes > 0 {
			rr.RSSEnd = srv.RSSBytes
			rr.RSSPerSessionKiB = report.Round3(float64(rr.RSSEnd-rr.RSSBefore) / float64(cfg.sessions) / 1024)
		}
		if srv.CPUSeconds > 0 && rr.Delivered > 0 {
			rr.ServerCPUPerDeliveredMicros = report.PerMicros(srv.CPUSeconds, rr.Delivered)
			rr.ServerCPUCores = report.Round3(srv.CPUSeconds / res.elapsedSeconds)
		}
	}
	if rr.ServerCPUCores == 0 {
		rep.Notes = append(rep.Notes, "server CPU not measured: give -pid, or a server with process_cpu_seconds_total on /metrics")
	}
	return rep, nil
}

// sum adds up the classes of a rooms run and merges their latency.
func (rr *roomsReport) sum(res LoadResult, classes []*load.Class) {
	for _, c := range res.Classes {
		rr.Sent += c.Sent
		rr.Expected += c.Expected
		rr.Delivered += c.Delivered
		rr.Errors += c.Errors
		rr.SentPerSec += c.SentPerSec
		rr.DeliveredPerSec += c.DeliveredPerSec
	}
	rr.SentPerSec, rr.DeliveredPerSec = report.Round3(rr.SentPerSec), report.Round3(rr.DeliveredPerSec)
	rr.DeliveryRatio = report.Round3(report.Ratio(rr.Delivered, rr.Expected))
	var h *hdrhistogram.Histogram
	for _, c := range classes {
		for _, s := range c.Subs {
			if s == nil || s.Hist == nil {
				continue
			}
			if h == nil {
				h = report.NewHistogram()
			}
			h.Merge(s.Hist)
		}
	}
	rr.Latency = report.Summarize(h)
}

func (rr *roomsReport) writeText(w io.Writer) {
	hb := "off"
	if rr.HeartBeatMillis > 0 {
		hb = (time.Duration(rr.HeartBeatMillis) * time.Millisecond).String()
	}
	fmt.Fprintf(w, "rooms: %d sessions in %d rooms of up to %d, %g SEND/s each, heart-beat %s; setup %.1fs\n",
		rr.Sessions, rr.Rooms, rr.RoomSize, rr.Rate, hb, rr.SetupSeconds)
	fmt.Fprintf(w, "delivered: %.1f msg/s of %.1f offered; %d of %d expected (ratio %.3f), %d errors\n",
		rr.DeliveredPerSec, rr.OfferedPerSec, rr.Delivered, rr.Expected, rr.DeliveryRatio, rr.Errors)
	if l := rr.Latency; l != nil {
		fmt.Fprintf(w, "latency (one player per room, %d messages): p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms\n", l.Count, l.P50, l.P99, l.P999, l.Max)
	}
	rr.writeSplit(w)
	if rr.ServerCPUCores > 0 {
		fmt.Fprintf(w, "server CPU: %.2f µs per delivered message, %.2f cores\n", rr.ServerCPUPerDeliveredMicros, rr.ServerCPUCores)
	}
	if rr.RSSEnd > 0 {
		fmt.Fprintf(w, "server RSS: %.1f MiB before the first session, %.1f MiB at the end of the load: %.1f KiB per session\n",
			MiB(rr.RSSBefore), MiB(rr.RSSEnd), rr.RSSPerSessionKiB)
	}
	fmt.Fprintln(w)
}
