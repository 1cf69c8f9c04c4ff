package streams

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/fallback"
)

// Defaults of PublisherConfig, the relay's for its PUBLISH queue: the
// history publisher takes its place for destinations with history.
const (
	// DefaultQueueSize is the queue's capacity in messages: a second of
	// a busy instance's publishes, so that a Redis hiccup of that long
	// loses nothing.
	DefaultQueueSize = 8192
	// DefaultQueueBytes bounds the same queue in bytes: 32 MiB holds the
	// default queue of 4 KiB messages.
	DefaultQueueBytes = 32 << 20
	// DefaultBatchSize is the most messages sent per pipeline: large
	// enough to amortise a round trip, small enough that one pipeline
	// stays well under the Timeout.
	DefaultBatchSize = 256
)

// PublisherConfig configures a Publisher. The zero value works.
type PublisherConfig struct {
	// QueueSize is the queue's capacity in messages. Zero means
	// DefaultQueueSize; negative is an error.
	QueueSize int
	// QueueBytes bounds the payload bytes queued. Zero means
	// DefaultQueueBytes; negative is an error.
	QueueBytes int64
	// BatchSize is the most messages sent in one pipeline. Zero means
	// DefaultBatchSize; negative is an error.
	BatchSize int
}

// Publisher appends and publishes messages through a Store without
// making the caller wait: Publish queues, and one goroutine sends what
// is queued, up to BatchSize messages at a time, as one pipeline with
// one append.lua run per destination in the batch (its messages in
// queue order). One goroutine and one pipeline in flight keep the order
// of each destination's messages; a run appends and publishes them
// atomically, so every instance delivers them in offset order.
//
// A message that finds the queue full is dropped and counted; a batch
// Redis fails is counted and not retried (a run that timed out may have
// appended). A Publisher is safe for concurrent use.
type Publisher struct {
	store    *Store
	batch    int
	maxBytes int64
	queue    chan pubItem
	cluster  bool         // group a batch by hash slot
	bytes    atomic.Int64 // payload bytes queued

	// mu guards closed; Publish holds it shared so that Close never
	// closes the queue under a send.
	mu     sync.RWMutex
	closed bool
	done   chan struct{}

	published atomic.Uint64
	dropped   atomic.Uint64
	failed    atomic.Uint64
	pipelines atomic.Uint64
}

type pubItem struct {
	dest    string
	payload []byte
	r       history.Retention
}

// NewPublisher starts a Publisher on s. Close stops it.
func (s *Store) NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.QueueSize < 0 {
		return nil, configErrorf("PublisherConfig.QueueSize %d is negative", cfg.QueueSize)
	}
	if cfg.QueueBytes < 0 {
		return nil, configErrorf("PublisherConfig.QueueBytes %d is negative", cfg.QueueBytes)
	}
	if cfg.BatchSize < 0 {
		return nil, configErrorf("PublisherConfig.BatchSize %d is negative", cfg.BatchSize)
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	p := &Publisher{
		store:    s,
		batch:    cfg.BatchSize,
		maxBytes: cfg.QueueBytes,
		queue:    make(chan pubItem, cfg.QueueSize),
		cluster:  isCluster(s.cfg.Client),
		done:     make(chan struct{}),
	}
	go p.run()
	return p, nil
}

// Publish queues payload as dest's next message, kept as r says. It
// returns false, and counts the message dropped, when the queue is full,
// r is invalid or the Publisher is closed.
func (p *Publisher) Publish(dest string, payload []byte, r history.Retention) bool {
	if dest == "" || r.Validate() != nil {
		p.dropped.Add(1)
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.dropped.Add(1)
		return false
	}
	n := int64(len(payload))
	if p.bytes.Add(n) > p.maxBytes {
		p.bytes.Add(-n)
		p.dropped.Add(1)
		return false
	}
	select {
	case p.queue <- pubItem{dest: dest, payload: payload, r: r.WithDefaults()}:
		return true
	default:
		p.bytes.Add(-n)
		p.dropped.Add(1)
		return false
	}
}

// Close stops taking messages, sends what is queued, and returns when
// the goroutine has ended. It is idempotent.
func (p *Publisher) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	<-p.done
}

// run drains the queue batch by batch until Close.
func (p *Publisher) run() {
	defer close(p.done)
	items := make([]pubItem, 0, p.batch)
	pipe := p.store.cfg.Client.Pipeline()
	for it := range p.queue {
		items = append(items[:0], it)
	fill:
		for len(items) < p.batch {
			select {
			case it, ok := <-p.queue:
				if !ok {
					break fill
				}
				items = append(items, it)
			default:
				break fill
			}
		}
		p.flush(pipe, items)
		clear(items)
	}
}

// call is one append.lua run of a batch: destinations that share a hash
// slot (all of them, off Redis Cluster), each with its messages in
// queue order.
type call struct {
	dests []*destArgs
	n     int // messages
	cmd   *redis.Cmd
}

// flush sends items as one pipeline: one script run per hash slot on
// Redis Cluster, a single one otherwise.
func (p *Publisher) flush(pipe redis.Pipeliner, items []pubItem) {
	s := p.store
	var calls []*call
	byTag := make(map[string]*call)
	byDest := make(map[string]*destArgs)
	var bytes int64
	for _, it := range items {
		bytes += int64(len(it.payload))
		d := byDest[it.dest]
		if d == nil {
			d = &destArgs{dest: it.dest, r: it.r}
			byDest[it.dest] = d
			tag := ""
			if p.cluster {
				tag = s.tag(it.dest)
			}
			c := byTag[tag]
			if c == nil {
				c = &call{}
				byTag[tag] = c
				calls = append(calls, c)
			}
			c.dests = append(c.dests, d)
		}
		d.payloads = append(d.payloads, it.payload)
	}
	for _, c := range calls {
		for _, d := range c.dests {
			c.n += len(d.payloads)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	send := func(eval bool, cs []*call) {
		for _, c := range cs {
			keys, args := s.appendCall(c.dests)
			if eval {
				c.cmd = appendScript.Eval(ctx, pipe, keys, args...)
			} else {
				c.cmd = appendScript.EvalSha(ctx, pipe, keys, args...)
			}
		}
		p.pipelines.Add(1)
		_, _ = pipe.Exec(ctx)
	}
	send(false, calls)
	// A Redis that lost its script cache (a restart, a failover) ran
	// none of the EVALSHA it refused: send those again with the script.
	var again []*call
	for _, c := range calls {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		send(true, again)
	}
	failed := false
	for _, c := range calls {
		v, err := c.cmd.Slice()
		if err == nil && len(v) != 3*len(c.dests) {
			err = fmt.Errorf("streams: redis append: script returned %d values, want %d", len(v), 3*len(c.dests))
		}
		for i := 0; err == nil && i < len(c.dests); i++ {
			_, err = s.appended(v[3*i:3*i+3], len(c.dests[i].payloads))
		}
		if err != nil {
			failed = true
			s.errors.Add(1)
			p.failed.Add(uint64(c.n))
			continue
		}
		p.published.Add(uint64(c.n))
	}
	if failed {
		fallback.FollowCluster(s.cfg.Client)
	}
	p.bytes.Add(-bytes)
}

// PublisherStats counts what a Publisher did with the messages it was
// given: Published + Dropped + Failed + queued = Publish calls.
type PublisherStats struct {
	// Published counts messages appended and published.
	Published uint64
	// Dropped counts messages refused by Publish (queue full, closed).
	Dropped uint64
	// Failed counts messages of batches Redis failed.
	Failed uint64
	// Pipelines counts round trips sent.
	Pipelines uint64
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{
		Published: p.published.Load(),
		Dropped:   p.dropped.Load(),
		Failed:    p.failed.Load(),
		Pipelines: p.pipelines.Load(),
	}
}
