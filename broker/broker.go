package broker

import (
	"crypto/rand"
	"encoding/base32"
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
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
	mu sync.RWMutex
	// topics maps a destination to its subscriptions. The slice is copied
	// on every change and never modified in place, so Publish can iterate
	// it after releasing the lock.
	topics map[string][]*Subscription
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
	var raw [5]byte
	_, _ = rand.Read(raw[:])
	b := &Broker{
		hooks:  cfg.Hooks,
		seed:   maphash.MakeSeed(),
		prefix: base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw[:]),
	}
	for i := range b.shards {
		b.shards[i].topics = make(map[string][]*Subscription)
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
// destination's first subscription.
func (b *Broker) Subscribe(sub *Subscription) (first bool) {
	sh := b.shard(sub.Destination)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := sh.topics[sub.Destination]
	subs := make([]*Subscription, len(old), len(old)+1)
	copy(subs, old)
	sh.topics[sub.Destination] = append(subs, sub)
	if len(old) == 0 && b.hooks != nil {
		b.hooks.FirstSubscriber(sub.Destination)
	}
	return len(old) == 0
}

// Unsubscribe removes sub from its destination. It reports whether sub was
// subscribed and whether the destination has no subscription left.
func (b *Broker) Unsubscribe(sub *Subscription) (removed, last bool) {
	sh := b.shard(sub.Destination)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := sh.topics[sub.Destination]
	for i, s := range old {
		if s != sub {
			continue
		}
		if len(old) == 1 {
			delete(sh.topics, sub.Destination)
			if b.hooks != nil {
				b.hooks.LastSubscriberGone(sub.Destination)
			}
			return true, true
		}
		subs := make([]*Subscription, 0, len(old)-1)
		subs = append(subs, old[:i]...)
		sh.topics[sub.Destination] = append(subs, old[i+1:]...)
		return true, false
	}
	return false, len(old) == 0
}

// Subscribers returns the number of subscriptions on dest.
func (b *Broker) Subscribers(dest string) int {
	sh := b.shard(dest)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.topics[dest])
}

// Publish hands m to every subscription on m.Destination and returns how
// many subscribers accepted it. A subscriber that refuses (its queue is
// full) is not retried: it is expected to disconnect itself. Publish never
// blocks on a subscriber.
func (b *Broker) Publish(m *Message) (delivered int) {
	sh := b.shard(m.Destination)
	sh.mu.RLock()
	subs := sh.topics[m.Destination]
	sh.mu.RUnlock()
	for _, s := range subs {
		m.prepare(s.Version)
		if s.Subscriber.Deliver(s, m) {
			delivered++
		}
	}
	return delivered
}
