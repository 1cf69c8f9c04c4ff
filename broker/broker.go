package broker

import (
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/stompgate/stompgate/internal/randid"
)

// numShards spreads destinations over independently locked maps so that
// SUBSCRIBE on one topic never waits for fan-out on another. A power of
// two, so the shard is picked with a mask.
const numShards = 64

// Broker is an in-process topic broker: every SEND to a destination is
// delivered to every current subscription on exactly that destination.
// Delivery is at-most-once: a message is handed to each subscriber's
// outbound queue once and forgotten; ACK and NACK are validated by the
// session but never cause redelivery.
//
// The zero value is not usable; call New. A Broker is safe for concurrent
// use.
type Broker struct {
	hooks  Hooks
	seed   maphash.Seed
	prefix string // message-id prefix, unique per process
	seq    atomic.Uint64
	shards [numShards]shard
}

type shard struct {
	// mu guards topics, the map only; each topic guards its own
	// subscriptions, so fan-out on one topic never holds up another.
	mu     sync.RWMutex
	topics map[string]*topic
}

// topic is one destination's subscriptions. Subscribe appends and
// Unsubscribe swaps the last subscription into the gap, so a change costs
// O(1) however many subscribers the destination has: a client that
// subscribes and unsubscribes in a loop on a busy room costs the server
// no more than on an empty one. Publish iterates an immutable snapshot,
// rebuilt by the first Publish after a change: its O(subscribers) copy is
// paid at most once per publish, which is O(subscribers) anyway, and a
// subscriber may call back into the Broker from Deliver.
type topic struct {
	// mu guards subs and every subscription's index, and serialises
	// rebuilding snap.
	mu   sync.Mutex
	subs []*Subscription
	// snap is the subscriptions as of the last change, never modified
	// once stored; nil after a change until a Publish rebuilds it.
	snap atomic.Pointer[[]*Subscription]
}

// snapshot returns the topic's subscriptions for a fan-out.
func (t *topic) snapshot() []*Subscription {
	if p := t.snap.Load(); p != nil {
		return *p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.snap.Load(); p != nil {
		return *p
	}
	subs := slices.Clone(t.subs)
	t.snap.Store(&subs)
	return subs
}

// Hooks is told when a destination gains its first subscription and loses
// its last one, for example to subscribe a cross-instance relay only to
// destinations with local subscribers. Both methods are called with the
// destination's shard locked, so calls for one destination arrive in
// order; they must not block and must not call back into the Broker.
type Hooks interface {
	FirstSubscriber(dest string)
	LastSubscriberGone(dest string)
}

// Config configures a Broker. The zero value is a broker without hooks.
type Config struct {
	// Hooks, if not nil, is told about first and last subscriptions.
	Hooks Hooks
}

// New returns an empty broker whose message ids start with a random
// per-process prefix, so ids stay unique across restarts and instances.
// It is NewWithConfig(Config{}).
func New() *Broker { return NewWithConfig(Config{}) }

// NewWithConfig returns an empty broker configured by cfg.
func NewWithConfig(cfg Config) *Broker {
	b := &Broker{
		hooks:  cfg.Hooks,
		seed:   maphash.MakeSeed(),
		prefix: randid.New(5),
	}
	for i := range b.shards {
		b.shards[i].topics = make(map[string]*topic)
	}
	return b
}

func (b *Broker) shard(dest string) *shard {
	return &b.shards[maphash.String(b.seed, dest)&(numShards-1)]
}

// NextID returns a new message id, unique within this process and, thanks
// to the random prefix, across processes.
func (b *Broker) NextID() string {
	var buf [32]byte
	n := copy(buf[:], b.prefix)
	buf[n] = '-'
	return string(strconv.AppendUint(buf[:n+1], b.seq.Add(1), 10))
}

// Subscribe adds sub to its destination. It reports whether this was the
// destination's first subscription. It costs O(1) whatever the number of
// subscriptions on the destination.
func (b *Broker) Subscribe(sub *Subscription) (first bool) {
	first, _ = b.SubscribeMax(sub, 0)
	return first
}

// SubscribeMax is Subscribe for a destination that may hold at most max
// subscriptions (0: no cap): when it already holds max, sub is not added
// and ok is false. The count and the add are one step under the
// destination's locks, so concurrent calls never take it past max; an
// Unsubscribe frees the place at once. It costs O(1) whatever the number
// of subscriptions on the destination.
func (b *Broker) SubscribeMax(sub *Subscription, max int) (first, ok bool) {
	sh := b.shard(sub.Destination)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.topics[sub.Destination]
	if t == nil {
		t = &topic{}
		sh.topics[sub.Destination] = t
		first = true
	}
	t.mu.Lock()
	if max > 0 && len(t.subs) >= max {
		t.mu.Unlock()
		// A topic that exists holds at least one subscription, so a
		// refusal never leaves an empty one behind.
		return false, false
	}
	sub.index = len(t.subs)
	t.subs = append(t.subs, sub)
	t.snap.Store(nil)
	t.mu.Unlock()
	if first && b.hooks != nil {
		b.hooks.FirstSubscriber(sub.Destination)
	}
	return first, true
}

// Unsubscribe removes sub from its destination. It reports whether sub was
// subscribed and whether the destination has no subscription left. It
// costs O(1) whatever the number of subscriptions on the destination.
func (b *Broker) Unsubscribe(sub *Subscription) (removed, last bool) {
	sh := b.shard(sub.Destination)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.topics[sub.Destination]
	if t == nil {
		return false, true
	}
	t.mu.Lock()
	i := sub.index
	if i < 0 || i >= len(t.subs) || t.subs[i] != sub {
		t.mu.Unlock()
		return false, false
	}
	end := len(t.subs) - 1
	if i != end {
		moved := t.subs[end]
		t.subs[i] = moved
		moved.index = i
	}
	t.subs[end] = nil
	t.subs = t.subs[:end]
	t.snap.Store(nil)
	sub.index = -1
	if end == 0 {
		t.subs = nil
		delete(sh.topics, sub.Destination)
		last = true
	} else if cap(t.subs) > 64 && len(t.subs) < cap(t.subs)/4 {
		// Let a room that emptied out give its memory back.
		t.subs = append([]*Subscription(nil), t.subs...)
	}
	t.mu.Unlock()
	if last && b.hooks != nil {
		b.hooks.LastSubscriberGone(sub.Destination)
	}
	return true, last
}

// Subscribers returns the number of subscriptions on dest.
func (b *Broker) Subscribers(dest string) int {
	sh := b.shard(dest)
	sh.mu.RLock()
	t := sh.topics[dest]
	sh.mu.RUnlock()
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.subs)
}

// Publish hands m to every subscription on m.Destination and returns how
// many subscribers accepted it. A subscriber that refuses (its queue is
// full) is not retried: it is expected to disconnect itself. Publish never
// blocks on a subscriber.
func (b *Broker) Publish(m *Message) (delivered int) {
	return b.PublishBatch(m, nil)
}

// PublishBatch is Publish for a publisher that flushes batch (see Batch)
// before it next waits; subscribers may defer their writing to it.
func (b *Broker) PublishBatch(m *Message, batch *Batch) (delivered int) {
	sh := b.shard(m.Destination)
	sh.mu.RLock()
	t := sh.topics[m.Destination]
	sh.mu.RUnlock()
	if t == nil {
		return 0
	}
	m.stampQueued()
	for _, s := range t.snapshot() {
		m.prepare(s.Version)
		if s.Subscriber.Deliver(s, m, batch) {
			delivered++
		}
	}
	return delivered
}
