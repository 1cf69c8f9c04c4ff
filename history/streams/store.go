package streams

import (
	"context"
	_ "embed" // for the scripts
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/internal/randid"
)

// Defaults of Config.
const (
	// DefaultPrefix starts every key.
	DefaultPrefix = "stompgate:"
	// DefaultTimeout bounds one script call or one pipeline of them:
	// the relay's bound for a pipeline of PUBLISH. An append of a batch
	// and a read of DefaultMaxRecovery entries take a few milliseconds
	// on a healthy Redis.
	DefaultTimeout = time.Second
	// DefaultEpochTTL is how long a destination's epoch and last offset
	// outlive its last append: a day, so that a client away longer than
	// the history lasts, from a room where nothing was said meanwhile,
	// learns that it missed nothing instead of being told to reload.
	// One idle destination costs about 100 bytes for that day.
	DefaultEpochTTL = 24 * time.Hour
)

var (
	//go:embed prelude.lua
	preludeLua string
	//go:embed append.lua
	appendLua string
	//go:embed tail.lua
	tailLua string

	// The scripts are hashed once; Run sends EVALSHA and falls back to
	// EVAL when the server answers NOSCRIPT.
	appendScript = redis.NewScript(preludeLua + appendLua)
	tailScript   = redis.NewScript(preludeLua + tailLua)
)

// Config configures a Store. Client is required.
type Config struct {
	// Client is the connection to Redis: a single node, Sentinel or
	// Cluster client (internal/redisclient builds one from a URL). Its
	// options must have ContextTimeoutEnabled set.
	Client redis.UniversalClient
	// Prefix starts every key. Empty means DefaultPrefix. It must not
	// contain '{' or '}', which would change the hash tag.
	Prefix string
	// Tag returns the hash tag of a destination's keys. Nil means the
	// hash tag of the destination's Channel, so that keys and channel
	// share a slot, as SPUBLISH from the script needs on Redis Cluster
	// (with the relay's channels, its shard group); without a Channel, or
	// for a channel without a hash tag, the destination itself.
	Tag func(dest string) string
	// Channel returns the channel an append publishes its frames on.
	// Nil means appends are not published (a history without
	// cross-instance delivery, as in tests).
	Channel func(dest string) string
	// Sharded publishes with SPUBLISH (Redis Cluster) instead of
	// PUBLISH. Default false.
	Sharded bool
	// Timeout bounds each call (one script, or one pipeline of the
	// Publisher). Zero means DefaultTimeout; negative is an error.
	Timeout time.Duration
	// EpochTTL is how long a destination's epoch outlives its last
	// append. Zero means DefaultEpochTTL; negative is an error.
	EpochTTL time.Duration
}

// Store keeps histories in Redis Streams, shared by every instance
// (see the package documentation for the model and the keys). Each
// append runs append.lua, which assigns offsets, adds the entries and
// publishes them in one atomic step.
//
// A Store is safe for concurrent use. It does not close Client.
type Store struct {
	cfg Config

	nAppended atomic.Uint64 // messages appended
	reads     atomic.Uint64 // Tail calls that reached Redis
	epochs    atomic.Uint64 // epochs started by a script
	errors    atomic.Uint64 // calls that failed
}

// New returns a Store configured by cfg. It does not
// contact Redis.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, configErrorf("Config.Client is nil")
	}
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("Config.Client has ContextTimeoutEnabled false: a hung Redis would hold a recovery past Timeout")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, configErrorf("Config.Prefix %q contains a brace", cfg.Prefix)
	}
	if cfg.Timeout < 0 {
		return nil, configErrorf("Config.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.EpochTTL < 0 {
		return nil, configErrorf("Config.EpochTTL %v is negative", cfg.EpochTTL)
	}
	if cfg.EpochTTL == 0 {
		cfg.EpochTTL = DefaultEpochTTL
	}
	return &Store{cfg: cfg}, nil
}

var _ history.Store = (*Store)(nil)

// Keys returns dest's meta hash and stream keys, which share a hash tag:
// <prefix>hist:{<dest>}:m and :s when the tag is the destination,
// <prefix>hist:{<tag>}<dest>:m and :s otherwise.
func (s *Store) Keys(dest string) (meta, stream string) {
	base := s.cfg.Prefix + "hist:{" + dest + "}"
	if tag := s.tag(dest); tag != dest {
		base = s.cfg.Prefix + "hist:{" + tag + "}" + dest
	}
	return base + ":m", base + ":s"
}

// destArgs is one destination's part of an append.lua call.
type destArgs struct {
	dest     string
	r        history.Retention
	payloads [][]byte
}

// appendCall returns append.lua's keys and arguments for ds.
func (s *Store) appendCall(ds []*destArgs) (keys []string, args []any) {
	keys = make([]string, 0, 2*len(ds))
	n := 3
	for _, d := range ds {
		n += 4 + len(d.payloads)
	}
	args = make([]any, 0, n)
	sharded := "0"
	if s.cfg.Sharded {
		sharded = "1"
	}
	args = append(args, s.cfg.EpochTTL.Milliseconds(), randid.New(10), sharded)
	for _, d := range ds {
		meta, stream := s.Keys(d.dest)
		keys = append(keys, meta, stream)
		ch := ""
		if s.cfg.Channel != nil {
			ch = s.cfg.Channel(d.dest)
		}
		args = append(args, d.r.For.Milliseconds(), d.r.Keep, ch, len(d.payloads))
		for _, p := range d.payloads {
			args = append(args, p)
		}
	}
	return keys, args
}

// Append adds data as dest's next message and, if Channel is set,
// publishes its frame, in one script run bounded by Timeout. The
// Publisher does the same for many messages per round trip.
func (s *Store) Append(ctx context.Context, dest string, data []byte, r history.Retention) (history.Position, error) {
	if dest == "" {
		return history.Position{}, history.ErrEmptyDestination
	}
	if err := r.Validate(); err != nil {
		return history.Position{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	keys, args := s.appendCall([]*destArgs{{dest: dest, r: r.WithDefaults(), payloads: [][]byte{data}}})
	v, err := appendScript.Run(ctx, s.cfg.Client, keys, args...).Slice()
	if err != nil {
		s.errors.Add(1)
		fallback.FollowCluster(s.cfg.Client)
		return history.Position{}, fmt.Errorf("streams: redis append: %w", err)
	}
	if len(v) != 3 {
		s.errors.Add(1)
		return history.Position{}, fmt.Errorf("streams: redis append: script returned %d values, want 3", len(v))
	}
	pos, err := s.appended(v, 1)
	if err != nil {
		s.errors.Add(1)
	}
	return pos, err
}

// appended reads one destination's triple of append.lua's answer, for n
// messages, and counts them.
func (s *Store) appended(v []any, n int) (history.Position, error) {
	epoch, _ := v[0].(string)
	first, _ := v[1].(int64)
	started, _ := v[2].(int64)
	if !history.ValidEpoch(epoch) || first < 1 {
		return history.Position{}, fmt.Errorf("streams: redis append: script returned epoch %q offset %d", epoch, first)
	}
	s.nAppended.Add(uint64(n))
	if started == 1 {
		s.epochs.Add(1)
	}
	return history.Position{Offset: uint64(first), Epoch: epoch}, nil
}

// Tail returns dest's snapshot with at most limit newest entries, in
// one script run bounded by Timeout. A destination whose history lost
// continuity gets a new epoch here, as it would on its next append.
func (s *Store) Tail(ctx context.Context, dest string, limit int, r history.Retention) (history.Snapshot, error) {
	if err := r.Validate(); err != nil {
		return history.Snapshot{}, err
	}
	r = r.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	meta, stream := s.Keys(dest)
	s.reads.Add(1)
	args := []any{s.cfg.EpochTTL.Milliseconds(), randid.New(10), r.For.Milliseconds(), max(limit, 0)}
	v, err := tailScript.Run(ctx, s.cfg.Client, []string{meta, stream}, args...).Slice()
	if err != nil {
		s.errors.Add(1)
		fallback.FollowCluster(s.cfg.Client)
		return history.Snapshot{}, fmt.Errorf("streams: redis tail: %w", err)
	}
	snap, started, err := parseTail(v)
	if err != nil {
		s.errors.Add(1)
	}
	if started {
		s.epochs.Add(1)
	}
	return snap, err
}

// parseTail reads tail.lua's answer, and whether it started an epoch.
func parseTail(v []any) (history.Snapshot, bool, error) {
	if len(v) < 4 || len(v)%2 != 0 {
		return history.Snapshot{}, false, fmt.Errorf("streams: redis tail: script returned %d values", len(v))
	}
	epoch, _ := v[0].(string)
	last, _ := v[1].(int64)
	first, _ := v[2].(int64)
	started, _ := v[3].(int64)
	if (epoch != "" && !history.ValidEpoch(epoch)) || last < 0 || first < 1 {
		return history.Snapshot{}, false, fmt.Errorf("streams: redis tail: script returned epoch %q last %d first %d", epoch, last, first)
	}
	snap := history.Snapshot{Epoch: epoch, Last: uint64(last), First: uint64(first)}
	if n := (len(v) - 4) / 2; n > 0 {
		snap.Entries = make([]history.Entry, 0, n)
		for i := 4; i < len(v); i += 2 {
			off, _ := v[i].(int64)
			data, _ := v[i+1].(string)
			snap.Entries = append(snap.Entries, history.Entry{Offset: uint64(off), Data: []byte(data)})
		}
	}
	return snap, started == 1, nil
}

// StoreStats counts what a Store did.
type StoreStats struct {
	// Appended counts messages appended (by Append and the Publisher).
	Appended uint64
	// Reads counts Tail calls sent to Redis.
	Reads uint64
	// Epochs counts epochs started because continuity was lost or the
	// history was new.
	Epochs uint64
	// Errors counts calls that failed.
	Errors uint64
}

// Stats returns the store's counters.
func (s *Store) Stats() StoreStats {
	return StoreStats{
		Appended: s.nAppended.Load(),
		Reads:    s.reads.Load(),
		Epochs:   s.epochs.Load(),
		Errors:   s.errors.Load(),
	}
}

// tag returns dest's hash tag (see Config.Tag).
func (s *Store) tag(dest string) string {
	if s.cfg.Tag != nil {
		return s.cfg.Tag(dest)
	}
	if s.cfg.Channel != nil {
		if t, ok := hashTag(s.cfg.Channel(dest)); ok {
			return t
		}
	}
	return dest
}

// hashTag returns the part of key Redis Cluster hashes when it has a
// tag: what lies between the first '{' and the first '}' after it, if
// not empty.
func hashTag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}

// isCluster reports a Redis Cluster client, on which one script may
// only touch the keys of one hash slot.
func isCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}
