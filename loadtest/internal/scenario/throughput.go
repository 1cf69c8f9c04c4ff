package scenario

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/load"
)

// throughputConfig are the settings of the throughput scenario.
type throughputConfig struct {
	Common
	publishers  int
	subscribers int
	size        int
	body        string
	rate        float64
	window      int
	perMessage  int
	burstEvery  time.Duration
	burstFor    time.Duration
}

// Throughput defaults and bounds.
const (
	defaultSize = 100
	// defaultWindow is the unpaced publishers' bound on messages in
	// flight per subscriber: well under wsserver's default outbound queue
	// of 1,024 frames, so that a subscriber is never closed as a slow
	// consumer, and enough to keep batches full.
	defaultWindow = 256
	// maxBodySize bounds -size: wsserver's default frame limit is 64 KiB.
	maxBodySize = 1 << 20
)

func (c *throughputConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("throughput", stderr)
	c.Register(fs, 10*time.Second)
	fs.IntVar(&c.publishers, "publishers", 1, "publishing sessions, all to one topic")
	fs.IntVar(&c.subscribers, "subscribers", 1, "subscribing sessions, all on that topic")
	fs.IntVar(&c.size, "size", defaultSize, fmt.Sprintf("message body size in bytes (at least the %d-byte time stamp)", load.StampLen))
	fs.StringVar(&c.body, "body", load.BodyPad, "what fills each body after its time stamp: pad ('x's), chat or game (JSON, each message different); compression ratios depend on it")
	fs.Float64Var(&c.rate, "rate", 0, "SEND frames per second per publisher (0: as fast as the in-flight window allows)")
	fs.IntVar(&c.window, "window", defaultWindow, "with -rate 0, messages in flight per subscriber before publishers wait (all publishers together)")
	fs.IntVar(&c.perMessage, "frames-per-message", 0, "SEND frames per WebSocket message at most (1: one frame per message, as a browser sends; 0: as many as fit in 32 KiB)")
	fs.DurationVar(&c.burstEvery, "burst-every", 0, "with -rate: publishers send only in bursts that start this often, silent in between (0: steadily)")
	fs.DurationVar(&c.burstFor, "burst-for", 200*time.Millisecond, "with -burst-every: how long each burst lasts, at -rate")
	return fs
}

func (c *throughputConfig) Validate() error {
	switch {
	case c.publishers <= 0 || c.subscribers <= 0:
		return fmt.Errorf("-publishers %d / -subscribers %d: must be positive", c.publishers, c.subscribers)
	case c.publishers+c.subscribers > maxSessions:
		return fmt.Errorf("-publishers + -subscribers = %d: above the maximum %d", c.publishers+c.subscribers, maxSessions)
	case c.size < 0 || c.size > maxBodySize:
		return fmt.Errorf("-size %d: must be in [0, %d]", c.size, maxBodySize)
	case !slices.Contains(load.BodyKinds, c.body):
		return fmt.Errorf("-body %q: must be one of %v", c.body, load.BodyKinds)
	case c.rate < 0 || c.rate > MaxRate:
		return fmt.Errorf("-rate %v: must be in [0, %d]", c.rate, MaxRate)
	case c.window <= 0:
		return fmt.Errorf("-window %d: must be positive", c.window)
	case c.perMessage < 0:
		return fmt.Errorf("-frames-per-message %d is negative", c.perMessage)
	case c.burstEvery < 0:
		return fmt.Errorf("-burst-every %v is negative", c.burstEvery)
	case c.burstEvery > 0 && c.rate == 0:
		return fmt.Errorf("-burst-every %v needs a -rate", c.burstEvery)
	case c.burstEvery > 0 && (c.burstFor <= 0 || c.burstFor > c.burstEvery):
		return fmt.Errorf("-burst-for %v: must be in (0, -burst-every %v]", c.burstFor, c.burstEvery)
	}
	return nil
}

// RunThroughput is the throughput scenario: every publisher sends to one
// topic and every subscriber receives everything. Against wsserver, start
// it with a -send-limit above what a publisher sends (e.g. -send-limit
// 1000000): its default limit of 20 SEND/s per session would be measured
// instead.
func RunThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg throughputConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return throughput(ctx, &cfg, stderr)
	})
}

func (c *throughputConfig) Title() string {
	rate := "unpaced"
	if c.rate > 0 {
		rate = fmt.Sprintf("%g/s each", c.rate)
	}
	shape := ""
	if c.rate == 0 {
		shape = fmt.Sprintf(", %d in flight per subscriber", c.window)
	}
	if c.perMessage > 0 {
		shape += fmt.Sprintf(", %d SEND per WebSocket message", c.perMessage)
	}
	if c.burstEvery > 0 {
		shape += fmt.Sprintf(", in bursts of %v every %v", c.burstFor, c.burstEvery)
	}
	return fmt.Sprintf("throughput: %d publishers (%s) → %d subscribers, %d-byte bodies%s, %v",
		c.publishers, rate, c.subscribers, max(c.size, load.StampLen), shape, c.Duration)
}

func throughput(ctx context.Context, cfg *throughputConfig, stderr io.Writer) (*Report, error) {
	r := NewLoadRun(&cfg.Common, stderr)
	defer r.CloseAll()
	cls := &load.Class{Name: "throughput", Fanout: int64(cfg.subscribers), Publishers: cfg.publishers, Subscribers: cfg.subscribers}
	r.Classes = []*load.Class{cls}
	r.perMessage = int64(cfg.perMessage)
	if cfg.rate == 0 {
		r.win = load.NewWindow(int64(cfg.window), cls.Fanout)
	}
	dest := cfg.TopicPrefix + "throughput"
	cls.Subs = make([]*load.Subscriber, cfg.subscribers)
	err := Parallel(ctx, cfg.subscribers, DialConcurrency, func(i int) error {
		var err error
		cls.Subs[i], err = r.Subscribe(ctx, cls, strconv.Itoa(i), dest, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	pads, err := load.Paddings(cfg.body, max(cfg.size, load.StampLen)-load.StampLen)
	if err != nil {
		return nil, err
	}
	cls.Pubs = make([]*load.Publisher, cfg.publishers)
	err = Parallel(ctx, cfg.publishers, DialConcurrency, func(i int) error {
		var err error
		cls.Pubs[i], err = r.Publish(ctx, cls, uint32(i), dest, cfg.size)
		if err == nil {
			cls.Pubs[i].Pads = pads
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	res := r.Execute(ctx, func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup) {
		for _, p := range cls.Pubs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if cfg.rate > 0 {
					if cfg.burstEvery > 0 {
						p.Bursts = load.Bursts{Every: cfg.burstEvery, On: cfg.burstFor}
					}
					p.RunPaced(ctx, r.Clock, start, end, cfg.rate)
					return
				}
				time.Sleep(time.Until(start))
				p.RunUnpaced(ctx, r.Clock, end, r.win)
			}()
		}
	})
	rep := &Report{
		Scenario: "throughput",
		Target:   cfg.URL,
		Started:  r.Clock.Base,
		Settings: map[string]any{
			"publishers": cfg.publishers, "subscribers": cfg.subscribers,
			"size": max(cfg.size, load.StampLen), "rate": cfg.rate, "window": cfg.window,
			"frames_per_message": cfg.perMessage,
			"burst_every":        cfg.burstEvery.String(), "burst_for": cfg.burstFor.String(),
			"duration": cfg.Duration.String(),
		},
	}
	rep.fromLoad(res)
	if f := rep.Server; f != nil && f.Frames != nil && f.Frames.SendDropped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"the server dropped %d SEND frames: its per-session limit is in the way; start wsserver with -send-limit 1000000 to measure throughput",
			f.Frames.SendDropped))
	}
	return rep, nil
}
