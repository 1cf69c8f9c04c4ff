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
	common
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
	// maxRate bounds a paced rate per publisher.
	maxRate = 1_000_000
)

func (c *floodConfig) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("flood", stderr)
	c.register(fs, 10*time.Second)
	fs.IntVar(&c.normal, "normal", defaultNormal, "normal sessions (publishers)")
	fs.Float64Var(&c.normalRate, "normal-rate", defaultNormalRate, "SEND frames per second of each normal session")
	fs.IntVar(&c.abusers, "abusers", defaultAbusers, "abusive sessions (publishers)")
	fs.Float64Var(&c.abuserRate, "abuser-rate", defaultAbuserRate, "SEND frames per second of each abusive session")
	fs.IntVar(&c.roomSize, "room-size", defaultRoomSize, "normal publishers per room; each room has one observer session")
	return fs
}

func (c *floodConfig) validate() error {
	switch {
	case c.normal < 0 || c.abusers < 0:
		return fmt.Errorf("-normal %d / -abusers %d: must not be negative", c.normal, c.abusers)
	case c.normal+c.abusers == 0:
		return fmt.Errorf("-normal and -abusers are both 0: nothing to run")
	case c.normal+c.abusers > maxSessions:
		return fmt.Errorf("-normal + -abusers = %d: above the maximum %d", c.normal+c.abusers, maxSessions)
	case c.normal > 0 && (c.normalRate <= 0 || c.normalRate > maxRate):
		return fmt.Errorf("-normal-rate %v: must be in (0, %d]", c.normalRate, maxRate)
	case c.abusers > 0 && (c.abuserRate <= 0 || c.abuserRate > maxRate):
		return fmt.Errorf("-abuser-rate %v: must be in (0, %d]", c.abuserRate, maxRate)
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
	return runScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*runReport, error) {
		return flood(ctx, &cfg, stderr)
	})
}

func (c *floodConfig) title() string {
	return fmt.Sprintf("flood: %d normal sessions at %g SEND/s in rooms of %d, %d abusers at %g SEND/s each in its own room, %v",
		c.normal, c.normalRate, c.roomSize, c.abusers, c.abuserRate, c.duration)
}

// flood runs the scenario and returns its report.
func flood(ctx context.Context, cfg *floodConfig, stderr io.Writer) (*runReport, error) {
	r := newLoadRun(&cfg.common, stderr)
	defer r.closeAll()
	normal := &load.Class{Name: "normal", Fanout: 1, Publishers: cfg.normal}
	abuser := &load.Class{Name: "abuser", Fanout: 1, Publishers: cfg.abusers}
	rooms := (cfg.normal + cfg.roomSize - 1) / cfg.roomSize
	normal.Subscribers, abuser.Subscribers = rooms, cfg.abusers
	if cfg.normal > 0 {
		r.classes = append(r.classes, normal)
	}
	if cfg.abusers > 0 {
		r.classes = append(r.classes, abuser)
	}
	roomDest := func(i int) string { return cfg.topicPrefix + "room." + strconv.Itoa(i) }
	abuseDest := func(i int) string { return cfg.topicPrefix + "abuse." + strconv.Itoa(i) }

	// Observers first, so that nothing published is missed.
	normal.Subs = make([]*load.Subscriber, rooms)
	abuser.Subs = make([]*load.Subscriber, cfg.abusers)
	err := parallel(ctx, rooms+cfg.abusers, dialConcurrency, func(i int) error {
		var err error
		if i < rooms {
			normal.Subs[i], err = r.subscribe(ctx, normal, "0", roomDest(i), true)
		} else {
			abuser.Subs[i-rooms], err = r.subscribe(ctx, abuser, "0", abuseDest(i-rooms), true)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	normal.Pubs = make([]*load.Publisher, cfg.normal)
	abuser.Pubs = make([]*load.Publisher, cfg.abusers)
	err = parallel(ctx, cfg.normal+cfg.abusers, dialConcurrency, func(i int) error {
		var err error
		if i < cfg.normal {
			normal.Pubs[i], err = r.publish(ctx, normal, uint32(i), roomDest(i/cfg.roomSize), load.StampLen)
		} else {
			j := i - cfg.normal
			abuser.Pubs[j], err = r.publish(ctx, abuser, uint32(i), abuseDest(j), load.StampLen)
		}
		return err
	})
	if err != nil {
		return nil, err
	}

	res := r.execute(ctx, func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup) {
		r.pace(ctx, normal.Pubs, start, end, cfg.normalRate, wg)
		r.pace(ctx, abuser.Pubs, start, end, cfg.abuserRate, wg)
	})
	rep := &runReport{
		Scenario: "flood",
		Target:   cfg.url,
		Started:  r.ck.Base,
		Settings: map[string]any{
			"normal": cfg.normal, "normal_rate": cfg.normalRate,
			"abusers": cfg.abusers, "abuser_rate": cfg.abuserRate,
			"room_size": cfg.roomSize, "duration": cfg.duration.String(),
			"rooms": rooms, "abuser_rooms": "one room and one observer per abuser",
		},
	}
	rep.fromLoad(res)
	return rep, nil
}
