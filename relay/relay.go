package relay

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/randid"
)

// Relay carries topic messages between server instances through Redis
// Pub/Sub. It is the broker's Hooks (it subscribes to a destination's
// channel while the destination has local subscribers) and the server's
// Relay (it publishes every SEND that passed the interceptor chain).
// Messages from other instances go to local subscribers through
// Broker.Publish; the relay's own messages, which Redis echoes back, are
// skipped, since the server already delivered them locally.
//
// Nothing on the session's path waits for Redis: Publish and the hooks
// only enqueue. Three kinds of goroutine do the rest: one publisher that
// drains the queue into pipelines, one control goroutine that applies
// subscription changes in order and replaces lost subscription
// connections, and one receiver per subscription connection.
//
// The zero value is not usable; call New, then Start with the broker built
// with the relay as its Hooks. A Relay is safe for concurrent use.
type Relay struct {
	cfg      Config
	sharded  bool    // Redis Cluster: SPUBLISH and SSUBSCRIBE
	instance string  // random per Relay, tags every published message
	signer   *Signer // nil without Config.Key
	out      chan queued
	// outBytes is what the messages in out hold (Config.QueueBytes).
	outBytes atomic.Int64
	kick     chan struct{} // capacity 1: subscription changes are waiting
	stop     chan struct{} // closed by Close
	closed   atomic.Bool
	outage   outage

	// mu guards want, changed, started, broker and history. It is taken inside
	// the broker's shard lock (by the hooks) and never held while calling
	// the broker or Redis.
	mu sync.Mutex
	// want is the set of destinations with local subscribers.
	want map[string]struct{}
	// changed are the destinations whose want changed since the control
	// goroutine last looked, in no order: only the final state matters.
	changed map[string]struct{}
	started bool
	broker  *broker.Broker
	history HistoryPublisher // destinations with history; nil: none (SetHistory)

	// live holds the channels Redis confirmed a subscription to and did
	// not unsubscribe since (Live); written by the receivers.
	live sync.Map

	// evMu guards events, the receivers' reports in the order they were
	// made, taken by the control goroutine. It is never held while
	// calling anything.
	evMu   sync.Mutex
	events []connEvent

	wg sync.WaitGroup
}

// The Relay is also a server.Relay; cmd/wsserver checks that, so that
// this package does not import the server.
var _ broker.Hooks = (*Relay)(nil)

// New validates cfg and returns a relay that is not yet started. It does
// not contact Redis.
func New(cfg Config) (*Relay, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	signer, err := NewSigner(c.Key, c.MaxAge)
	if err != nil {
		return nil, err
	}
	_, sharded := c.Client.(*redis.ClusterClient)
	r := &Relay{
		cfg:      c,
		signer:   signer,
		sharded:  sharded,
		instance: randid.New(10),
		out:      make(chan queued, c.QueueSize),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		want:     make(map[string]struct{}),
		changed:  make(map[string]struct{}),
	}
	r.outage.init(c.Logger, c.Observer)
	return r, nil
}

// Sharded reports whether the relay uses sharded Pub/Sub (Redis Cluster).
func (r *Relay) Sharded() bool { return r.sharded }

// InOutage reports whether the Relay finds Redis unreachable: an
// outage began (Observer.RelayOutage(true)) and has not ended.
func (r *Relay) InOutage() bool { return r.outage.active.Load() }

// Start starts the relay's goroutines; messages from other instances are
// delivered to b, which must be the broker built with r as its Hooks. It
// fails with ErrStarted on a second call and ErrClosed after Close.
func (r *Relay) Start(b *broker.Broker) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed.Load():
		return ErrClosed
	case r.started:
		return ErrStarted
	}
	r.started = true
	r.broker = b
	r.wg.Add(2)
	go r.publisher()
	go r.control()
	return nil
}

// Close stops the relay: messages still queued are published (bounded by
// Config.Timeout), the subscriptions are closed and every goroutine has
// ended when Close returns. Publish drops what it is given afterwards.
// Close is idempotent; it does not close Config.Client.
func (r *Relay) Close() error {
	if r.closed.Swap(true) {
		r.wg.Wait()
		return nil
	}
	close(r.stop)
	r.wg.Wait()
	return nil
}

// queued is a message on the outbound queue with the bytes it was counted
// as (its MemSize grows if local subscribers of other versions encode it
// meanwhile).
type queued struct {
	m *broker.Message
	n int64
}

// Publish hands m to the relay for the other instances. It never blocks:
// when the queue is full, in messages or in bytes, m is dropped and
// counted (DropQueueFull).
func (r *Relay) Publish(m *broker.Message) {
	if r.closed.Load() {
		r.cfg.Observer.RelayDropped(DropQueueFull, 1)
		return
	}
	n := int64(m.MemSize())
	if r.outBytes.Add(n) > int64(r.cfg.QueueBytes) {
		r.outBytes.Add(-n)
		r.cfg.Observer.RelayDropped(DropQueueFull, 1)
		return
	}
	select {
	case r.out <- queued{m, n}:
	default:
		r.outBytes.Add(-n)
		r.cfg.Observer.RelayDropped(DropQueueFull, 1)
	}
}

// take is the publisher's side of the queue.
func (r *Relay) take(q queued) *broker.Message {
	r.outBytes.Add(-q.n)
	return q.m
}

// FirstSubscriber is called by the broker, under its shard lock, when dest
// gains its first local subscription: the relay will subscribe to dest's
// channel. It only records the change.
func (r *Relay) FirstSubscriber(dest string) {
	r.mu.Lock()
	r.want[dest] = struct{}{}
	r.changed[dest] = struct{}{}
	r.mu.Unlock()
	r.signal()
}

// LastSubscriberGone is called by the broker, under its shard lock, when
// dest loses its last local subscription: the relay will unsubscribe from
// dest's channel. It only records the change.
func (r *Relay) LastSubscriberGone(dest string) {
	r.mu.Lock()
	delete(r.want, dest)
	r.changed[dest] = struct{}{}
	r.mu.Unlock()
	r.signal()
}

func (r *Relay) signal() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Channel returns the Redis channel that carries dest's messages:
//
//	<Prefix>{<dest>}              single Redis or Sentinel
//	<Prefix>{<group>}<dest>       Redis Cluster
//
// where group is FNV-1a(dest) modulo Config.ShardGroups, in decimal. The
// braces are the Cluster hash tag: every message of one destination goes
// through one slot, so one shard, in order.
func (r *Relay) Channel(dest string) string {
	if !r.sharded {
		return r.cfg.Prefix + "{" + dest + "}"
	}
	return r.cfg.Prefix + "{" + strconv.Itoa(r.group(dest)) + "}" + dest
}

// group returns dest's shard group; always 0 without Cluster.
func (r *Relay) group(dest string) int {
	if !r.sharded {
		return 0
	}
	return int(fnv1a(dest) % uint32(r.cfg.ShardGroups))
}

// fnv1a is the 32-bit FNV-1a hash: stable across processes and versions,
// unlike hash/maphash, so that every instance computes the same group.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
