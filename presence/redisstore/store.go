package redisstore

import (
	"context"
	_ "embed" // for the script
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/configerr"
	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/internal/randid"
	"github.com/stompgate/stompgate/presence"
)

// Defaults of Config.
const (
	// DefaultLeaseTTL is the session caps' lease TTL, and so the longest
	// the members of a dead instance stay: its sessions' users find their
	// session slots and their room places freed alike.
	DefaultLeaseTTL = 15 * time.Second
	// DefaultTimeout bounds one script call: a snapshot waits on the
	// subscribing session's reader, and a healthy Redis answers in well
	// under a millisecond.
	DefaultTimeout = 500 * time.Millisecond
	// DefaultPrefix starts every key and the channel.
	DefaultPrefix = "stompgate:presence:"
	// MaxPayload bounds an event message taken from the channel: a
	// script call emits at most the leaves of one dead instance's
	// members of one destination, a few hundred bytes each; a bigger
	// payload is not this store's and is dropped.
	MaxPayload = 1 << 20
	// keep is how long a destination's event counter outlives its last
	// write; watched and held destinations are written every LeaseTTL/3,
	// so a counter never restarts under a watcher.
	keep = time.Hour
	// minLeaseTTL keeps renewal (every TTL/3) from becoming a busy loop.
	minLeaseTTL = 30 * time.Millisecond
)

var (
	//go:embed presence.lua
	presenceLua    string
	presenceScript = redis.NewScript(presenceLua)
)

// ErrInvalidConfig is matched, with errors.Is, by every error New
// returns for a bad setting. The message names the setting.
var ErrInvalidConfig = errors.New("redisstore: invalid configuration")

// Config configures a Store.
type Config struct {
	// Client is the Redis (single, Sentinel or Cluster) every instance
	// shares. Required, with ContextTimeoutEnabled.
	Client redis.UniversalClient
	// LeaseTTL bounds how long a dead instance's members stay (see
	// doc.go). 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Timeout bounds each renewal call; Set and Snapshot are bounded by
	// their ctx. 0 means DefaultTimeout.
	Timeout time.Duration
	// Prefix starts every key and the channel; instances sharing a Redis
	// must share it. "" means DefaultPrefix; it must not contain a brace.
	Prefix string
	// Dropped, if not nil, counts an event message from the channel that
	// was too large or malformed.
	Dropped func()
	// StoreError, if not nil, counts a renewal that failed.
	StoreError func()
	// Logger logs renewal failures; nil means slog.Default().
	Logger *slog.Logger
}

// Store is a presence.Store in Redis, shared by every instance: each
// instance's share of each destination, under a lease per instance and
// destination that the instance renews while it holds members there, and
// events over one Pub/Sub channel. It is safe for concurrent use; Close
// stops its goroutines. It does not close Client.
type Store struct {
	client     redis.UniversalClient
	lease      time.Duration // what a renewal writes: 2/3 of LeaseTTL
	every      time.Duration // renewal period: 1/3 of LeaseTTL
	timeout    time.Duration
	prefix     string
	channel    string
	instance   string
	dropped    func()
	storeError func()
	logger     *slog.Logger

	// mu guards the fields below.
	mu      sync.Mutex
	held    map[string]map[string]share // dest -> principal -> its share here
	watched map[string]int              // dest -> Watched(true) minus Watched(false)
	deliver func(dest string, events []presence.Event)
	failing bool // renewal is failing; logged once
	// heard is the newest seq the channel brought, by watched
	// destination; behind the seq a renewal read there, by destination
	// whose channel was behind it then (see renew).
	heard  map[string]uint64
	behind map[string]uint64

	pubsub *redis.PubSub
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

var _ presence.Store = (*Store)(nil)

// New returns a Store, subscribed to the event channel, and starts its
// renewer.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, configErrorf("Config.Client is nil")
	}
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("Config.Client has ContextTimeoutEnabled false: a hung Redis would hold a subscribing session past Timeout")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < minLeaseTTL {
		return nil, configErrorf("Config.LeaseTTL %v is below %v", cfg.LeaseTTL, minLeaseTTL)
	}
	if cfg.Timeout < 0 {
		return nil, configErrorf("Config.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, configErrorf("Config.Prefix %q contains a brace", cfg.Prefix)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{
		client:     cfg.Client,
		lease:      cfg.LeaseTTL * 2 / 3,
		every:      cfg.LeaseTTL / 3,
		timeout:    cfg.Timeout,
		prefix:     cfg.Prefix,
		channel:    cfg.Prefix + "events",
		instance:   randid.New(8),
		dropped:    cfg.Dropped,
		storeError: cfg.StoreError,
		logger:     cfg.Logger,
		held:       make(map[string]map[string]share),
		watched:    make(map[string]int),
		heard:      make(map[string]uint64),
		behind:     make(map[string]uint64),
		stop:       make(chan struct{}),
	}
	s.pubsub = cfg.Client.Subscribe(context.Background(), s.channel)
	s.wg.Add(2)
	go s.receive()
	go s.renewLoop()
	return s, nil
}

func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "redisstore: ", format, args...)
}

// keys returns dest's four keys, hash-tagged on dest so that one script
// call touches one Cluster slot.
func (s *Store) keys(dest string) []string {
	base := s.prefix + "{" + dest + "}:"
	return []string{base + "m", base + "p", base + "i", base + "seq"}
}

// run calls the script for dest with op and its own arguments.
func (s *Store) run(ctx context.Context, dest, op string, args ...any) ([]any, error) {
	argv := append([]any{op, s.lease.Milliseconds(), s.instance, s.channel, dest, keep.Milliseconds()}, args...)
	v, err := presenceScript.Run(ctx, s.client, s.keys(dest), argv...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: %s %q: %w", op, dest, err)
	}
	return v, nil
}

// Set implements presence.Store.
func (s *Store) Set(ctx context.Context, dest, principal string, sessions int, info string) error {
	if _, err := s.run(ctx, dest, "set", principal, sessions, info); err != nil {
		return err
	}
	s.mu.Lock()
	ps := s.held[dest]
	if sessions > 0 {
		if ps == nil {
			ps = make(map[string]share)
			s.held[dest] = ps
		}
		ps[principal] = share{sessions, info}
	} else if ps != nil {
		delete(ps, principal)
		if len(ps) == 0 {
			delete(s.held, dest)
		}
	}
	s.mu.Unlock()
	return nil
}

// share is this instance's part of a member, as Set last wrote it.
type share struct {
	sessions int
	info     string
}

// Snapshot implements presence.Store: the members of every live instance,
// each principal once with its sessions summed.
func (s *Store) Snapshot(ctx context.Context, dest string, limit int) (presence.Snapshot, error) {
	v, err := s.run(ctx, dest, "read")
	if err != nil {
		return presence.Snapshot{}, err
	}
	seq, _ := v[0].(int64)
	byName := make(map[string]*presence.Member)
	for i := 1; i+1 < len(v); i += 2 {
		field, _ := v[i].(string)
		val, _ := v[i+1].(string)
		_, principal, ok1 := strings.Cut(field, "|")
		n, info, ok2 := strings.Cut(val, "|")
		sessions, err := strconv.Atoi(n)
		if !ok1 || !ok2 || err != nil {
			continue
		}
		if m := byName[principal]; m != nil {
			m.Sessions += sessions
			continue
		}
		byName[principal] = &presence.Member{Principal: principal, Sessions: sessions, Info: info}
	}
	members := make([]presence.Member, 0, len(byName))
	for _, m := range byName {
		members = append(members, *m)
	}
	return presence.SnapshotOf(uint64(seq), members, limit), nil
}

// Attach implements presence.Store.
func (s *Store) Attach(deliver func(dest string, events []presence.Event)) {
	s.mu.Lock()
	s.deliver = deliver
	s.mu.Unlock()
}

// Watched implements presence.Store: a watched destination is renewed
// too, so that this instance removes a dead one's members there even
// when it holds none itself.
func (s *Store) Watched(dest string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.watched[dest]++
		return
	}
	if s.watched[dest]--; s.watched[dest] <= 0 {
		delete(s.watched, dest)
		delete(s.heard, dest)
		delete(s.behind, dest)
	}
}

// wire is an event message on the channel.
type wire struct {
	D string `json:"d"`
	E []struct {
		S uint64 `json:"s"`
		O string `json:"o"`
		P string `json:"p"`
		I string `json:"i"`
	} `json:"e"`
}

// receive hands the channel's events to the tracker, in the order Redis
// sends them, which is the order the scripts numbered them in.
func (s *Store) receive() {
	defer s.wg.Done()
	for msg := range s.pubsub.Channel() {
		if len(msg.Payload) > MaxPayload {
			s.drop()
			continue
		}
		var w wire
		if err := json.Unmarshal([]byte(msg.Payload), &w); err != nil || w.D == "" {
			s.drop()
			continue
		}
		evs := make([]presence.Event, 0, len(w.E))
		for _, e := range w.E {
			op := presence.Op(e.O)
			if op != presence.OpJoin && op != presence.OpLeave {
				continue
			}
			evs = append(evs, presence.Event{Seq: e.S, Op: op, Principal: e.P, Info: e.I})
		}
		s.mu.Lock()
		deliver := s.deliver
		if _, ok := s.watched[w.D]; ok && len(evs) > 0 {
			s.heard[w.D] = max(s.heard[w.D], evs[len(evs)-1].Seq)
		}
		s.mu.Unlock()
		if deliver != nil && len(evs) > 0 {
			deliver(w.D, evs)
		}
	}
}

func (s *Store) drop() {
	if s.dropped != nil {
		s.dropped()
	}
}

// renewLoop renews, every LeaseTTL/3, the destinations this instance
// holds members of or watches.
func (s *Store) renewLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.renew()
		}
	}
}

// renew runs the renew op on each held or watched destination, all in
// one pipeline (split per node on a Cluster) bounded by the renewal
// period: an instance in 10,000 rooms renews them in a few round trips.
func (s *Store) renew() {
	s.mu.Lock()
	dests := make([]string, 0, len(s.held)+len(s.watched))
	holds := make([]bool, 0, cap(dests))
	for d := range s.held {
		dests, holds = append(dests, d), append(holds, true)
	}
	for d := range s.watched {
		if _, ok := s.held[d]; !ok {
			dests, holds = append(dests, d), append(holds, false)
		}
	}
	s.mu.Unlock()
	if len(dests) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.every)
	defer cancel()
	res, failed := s.renewPipeline(ctx, dests, holds, false)
	if failed != nil && redis.HasErrorPrefix(failed, "NOSCRIPT") {
		// Redis lost its script cache (a restart): EVAL loads it again.
		res, failed = s.renewPipeline(ctx, dests, holds, true)
	}
	for i, v := range res {
		if v == nil {
			continue
		}
		if seq, _ := v[0].(int64); seq > 0 {
			s.checkHeard(dests[i], uint64(seq))
		}
		if missing, _ := v[1].(int64); holds[i] && missing == 1 {
			// Redis lost this instance's lease (an outage longer than
			// it, or a failover): another instance may have removed its
			// shares as a dead one's. Write them back.
			if err := s.restore(dests[i]); err != nil {
				failed = err
			}
		}
	}
	if failed != nil {
		fallback.FollowCluster(s.client)
		if s.storeError != nil {
			s.storeError()
		}
	}
	s.mu.Lock()
	was := s.failing
	s.failing = failed != nil
	s.mu.Unlock()
	switch {
	case failed != nil && !was:
		s.logger.Warn("presence: lease renewal failing; a dead instance's members stay until it works again", "error", failed)
	case failed == nil && was:
		s.logger.Info("presence: lease renewal recovered")
	}
}

// renewPipeline sends the renew op for each of dests, by EVALSHA or, with
// eval set, EVAL. It returns each answer (nil where it failed) and the
// first error.
func (s *Store) renewPipeline(ctx context.Context, dests []string, holds []bool, eval bool) ([][]any, error) {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.Cmd, len(dests))
	for i, d := range dests {
		flag := "0"
		if holds[i] {
			flag = "1"
		}
		argv := []any{"renew", s.lease.Milliseconds(), s.instance, s.channel, d, keep.Milliseconds(), flag}
		if eval {
			cmds[i] = presenceScript.Eval(ctx, pipe, s.keys(d), argv...)
		} else {
			cmds[i] = presenceScript.EvalSha(ctx, pipe, s.keys(d), argv...)
		}
	}
	_, _ = pipe.Exec(ctx)
	out := make([][]any, len(dests))
	var first error
	for i, c := range cmds {
		v, err := c.Slice()
		if err != nil || len(v) < 2 {
			if first == nil {
				first = fmt.Errorf("redisstore: renew %q: %w", dests[i], err)
			}
			continue
		}
		out[i] = v
	}
	return out, first
}

// checkHeard compares seq, what a renewal read of dest, with what the
// channel brought: a watched destination whose channel is still behind
// the seq of the renewal before (not merely in flight) lost events, and
// the tracker is told so (presence.OpSync) to send a fresh snapshot.
func (s *Store) checkHeard(dest string, seq uint64) {
	s.mu.Lock()
	if _, ok := s.watched[dest]; !ok {
		s.mu.Unlock()
		return
	}
	heard, prev := s.heard[dest], s.behind[dest]
	var sync uint64
	switch {
	case heard >= seq:
		delete(s.behind, dest)
	case prev != 0 && heard < prev:
		sync = prev
		s.heard[dest] = seq // told once; the snapshot brings it to seq
		delete(s.behind, dest)
	default:
		s.behind[dest] = seq
	}
	deliver := s.deliver
	s.mu.Unlock()
	if sync != 0 && deliver != nil {
		deliver(dest, []presence.Event{{Seq: seq, Op: presence.OpSync}})
	}
}

// restore writes this instance's shares of dest again, as they were last
// set.
func (s *Store) restore(dest string) error {
	s.mu.Lock()
	shares := make(map[string]share, len(s.held[dest]))
	for p, sh := range s.held[dest] {
		shares[p] = sh
	}
	s.mu.Unlock()
	for p, sh := range shares {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		_, err := s.run(ctx, dest, "set", p, sh.sessions, sh.info)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// Instance returns this store's random instance id, as its keys name it.
func (s *Store) Instance() string { return s.instance }

// Close stops the renewer and the subscription and waits for them. The
// members this instance holds stay until their lease ends, so that its
// users reconnecting elsewhere within it are neither a leave nor a join.
// It is idempotent.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		err = s.pubsub.Close()
		s.wg.Wait()
	})
	return err
}
