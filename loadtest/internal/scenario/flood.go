package scenario

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/load"
)

// floodConfig are the settings of the flood scenario.
type floodConfig struct {
	Common
	normal     int
	normalRate float64
	abusers    int
	abuserRate float64
	roomSize   int
}

// Flood defaults: 250 users at the measured real peak of 1.3 SEND/s, and
// 10 scripts at 500/s, 25 times wsserver's default limit of 20/s.
const (
	defaultNormal     = 250
	defaultNormalRate = 1.3
	defaultAbusers    = 10
	defaultAbuserRate = 500
	defaultRoomSize   = 10
	// maxSessions bounds the sessions of one flood or throughput run.
	maxSessions = 50_000
	// MaxRate bounds a paced rate per publisher.
	MaxRate = 1_000_000
)

func (c *floodConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("flood", stderr)
	c.Register(fs, 10*time.Second)
	fs.IntVar(&c.normal, "normal", defaultNormal, "normal sessions (publishers)")
	fs.Float64Var(&c.normalRate, "normal-rate", defaultNormalRate, "SEND frames per second of each normal session")
	fs.IntVar(&c.abusers, "abusers", defaultAbusers, "abusive sessions (publishers)")
	fs.Float64Var(&c.abuserRate, "abuser-rate", defaultAbuserRate, "SEND frames per second of each abusive session")
	fs.IntVar(&c.roomSize, "room-size", defaultRoomSize, "normal publishers per room; each room has one observer session")
	return fs
}

func (c *floodConfig) Validate() error {
	switch {
	case c.normal < 0 || c.abusers < 0:
		return fmt.Errorf("-normal %d / -abusers %d: must not be negative", c.normal, c.abusers)
	case c.normal+c.abusers == 0:
		return fmt.Errorf("-normal and -abusers are both 0: nothing to run")
	case c.normal+c.abusers > maxSessions:
		return fmt.Errorf("-normal + -abusers = %d: above the maximum %d", c.normal+c.abusers, maxSessions)
	case c.normal > 0 && (c.normalRate <= 0 || c.normalRate > MaxRate):
		return fmt.Errorf("-normal-rate %v: must be in (0, %d]", c.normalRate, MaxRate)
	case c.abusers > 0 && (c.abuserRate <= 0 || c.abuserRate > MaxRate):
		return fmt.Errorf("-abuser-rate %v: must be in (0, %d]", c.abuserRate, MaxRate)
	case c.roomSize <= 0:
		return fmt.Errorf("-room-size %d: must be positive", c.roomSize)
	}
	return nil
}

// RunFlood is the flood scenario. Normal publishers are grouped into rooms
// of -room-size, each room a topic with one observer session subscribed.
// Each abuser publishes to a room of its own with its own observer, so an
// observer's count is exactly what the server let through from one
// abusive session. Every observer records the end-to-end latency of what
// it receives.
func RunFlood(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg floodConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return flood(ctx, &cfg, stderr)
	})
}

func (c *floodConfig) Title() string {
	return fmt.Sprintf("flood: %d normal sessions at %g SEND/s in rooms of %d, %d abusers at %g SEND/s each in its own room, %v",
		c.normal, c.normalRate, c.roomSize, c.abusers, c.abuserRate, c.Duration)
}

// flood runs the scenario and returns its report.
func flood(ctx context.Context, cfg *floodConfig, stderr io.Writer) (*Report, error) {
	r := NewLoadRun(&cfg.Common, stderr)
	defer r.CloseAll()
	normal := &load.Class{Name: "normal", Fanout: 1, Publishers: cfg.normal}
	abuser := &load.Class{Name: "abuser", Fanout: 1, Publishers: cfg.abusers}
	rooms := (cfg.normal + cfg.roomSize - 1) / cfg.roomSize
	normal.Subscribers, abuser.Subscribers = rooms, cfg.abusers
	if cfg.normal > 0 {
		r.Classes = append(r.Classes, normal)
	}
	if cfg.abusers > 0 {
		r.Classes = append(r.Classes, abuser)
	}
	roomDest := func(i int) string { return cfg.TopicPrefix + "room." + strconv.Itoa(i) }
	abuseDest := func(i int) string { return cfg.TopicPrefix + "abuse." + strconv.Itoa(i) }

	// Observers first, so that nothing published is missed.
	normal.Subs = make([]*load.Subscriber, rooms)
	abuser.Subs = make([]*load.Subscriber, cfg.abusers)
	err := Parallel(ctx, rooms+cfg.abusers, DialConcurrency, func(i int) error {
		var err error
		if i < rooms {
			normal.Subs[i], err = r.Subscribe(ctx, normal, "0", roomDest(i), true)
		} else {
			abuser.Subs[i-rooms], err = r.Subscribe(ctx, abuser, "0", abuseDest(i-rooms), true)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	normal.Pubs = make([]*load.Publisher, cfg.normal)
	abuser.Pubs = make([]*load.Publisher, cfg.abusers)
	err = Parallel(ctx, cfg.normal+cfg.abusers, DialConcurrency, func(i int) error {
		var err error
		if i < cfg.normal {
			normal.Pubs[i], err = r.Publish(ctx, normal, uint32(i), roomDest(i/cfg.roomSize), load.StampLen)
		} else {
			j := i - cfg.normal
			abuser.Pubs[j], err = r.Publish(ctx, abuser, uint32(i), abuseDest(j), load.StampLen)
		}
		return err
	})
	if err != nil {
		return nil, err
	}

	res := r.Execute(ctx, func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup) {
		r.Pace(ctx, normal.Pubs, start, end, cfg.normalRate, wg)
		r.Pace(ctx, abuser.Pubs, start, end, cfg.abuserRate, wg)
	})
	rep := &Report{
		Scenario: "flood",
		Target:   cfg.URL,
		Started:  r.Clock.Base,
		Settings: map[string]any{
			"normal": cfg.normal, "normal_rate": cfg.normalRate,
			"abusers": cfg.abusers, "abuser_rate": cfg.abuserRate,
			"room_size": cfg.roomSize, "duration": cfg.Duration.String(),
			"rooms": rooms, "abuser_rooms": "one room and one observer per abuser",
		},
	}
	rep.fromLoad(res)
	return rep, nil
}
