package handshake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/fallback"
)

// DefaultMaxBatch is the default RedisConfig.MaxBatch. A reconnect storm
// brings tens to a few hundred handshakes to one instance at once; 128
// decisions make a request of about 14 KB and a reply of about 4 KB, and
// Redis runs them in about half a millisecond (4.3 µs per decision in a
// batch, measured), so one batch never holds the other clients of the
// Redis for long, and a waiting caller sees about one round trip, not the
// depth of the batch.
const DefaultMaxBatch = 128

// DefaultMaxQueue is the default RedisConfig.MaxQueue. One pipelined
// instance answers on the order of 100,000 decisions per second (see
// BENCHMARKS.md), about 5,000 within the default Timeout of 50 ms: a
// decision queued behind more than 4,096 others would most likely time
// out anyway, so it fails at once and the Limiter decides it without Redis.
const DefaultMaxQueue = 4096

// DefaultMaxQueueWait is the default RedisConfig.MaxQueueWait: as long as
// the default Timeout. A decision queued behind that much work has met a
// backlog on this server (a flood, a saturated CPU), and is decided
// without Redis rather than held longer; at the measured 100,000
// decisions a second a full queue of DefaultMaxQueue drains in about
// 40 ms.
const DefaultMaxQueueWait = 50 * time.Millisecond

// DefaultMaxPipelines is the default RedisConfig.MaxPipelines: one
// pipeline in flight, the next batch gathering behind it. A second one in
// flight measured no faster with 50 callers (a median of 108,000 against
// 112,000 decisions/s over four alternating runs): it halves the batch,
// and Redis, which runs one script at a time, then spends more per
// decision. More may help when the round trip to Redis is long compared
// with the time Redis spends on a batch.
const DefaultMaxPipelines = 1

// PipelineStats counts the work of a RedisStore's pipeline since it was
// created. Every field only grows.
type PipelineStats struct {
	// Batches is the number of pipelines sent (NOSCRIPT retries not
	// counted).
	Batches uint64
	// Decisions is the number of decisions sent in those pipelines.
	// Decisions/Batches is the mean batch size.
	Decisions uint64
	// QueueFull is the number of decisions refused with ErrQueueFull
	// because RedisConfig.MaxQueue decisions were already waiting.
	QueueFull uint64
	// QueueWait is the number of decisions failed with ErrQueueWait
	// because they waited RedisConfig.MaxQueueWait without being sent.
	QueueWait uint64
}

// call is one decision waiting in the pipeline's queue. Calls are pooled:
// a call goes back to the pool only after its caller has read the answer,
// never when the caller gave up, because the sender may still read it.
type call struct {
	// Set by the caller before the call is queued; read by the sender.
	ctx context.Context
	// sendBy is when the call has waited MaxQueueWait: not sent by then,
	// it fails with ErrQueueWait.
	sendBy time.Time
	// deadline ends the caller's wait: sendBy + Timeout, or ctx's
	// deadline if earlier.
	deadline time.Time
	// bucket and ban are the decision's keys, two parts of one string
	// (one allocation). The script's arguments point at them (go-redis
	// reads a *string), which boxes no string: they must not change
	// until the call is answered.
	bucket, ban string
	rate        int64
	burst       int
	// nowMs is the test clock (RedisStore.nowMs) when set, else 0.
	nowMs int64

	// Written by the sender before done is signalled; read by the
	// caller after it.
	res Result
	err error

	// done receives one value when res and err are set. Buffered, so the
	// sender never waits for a caller that gave up.
	done chan struct{}
	// timer bounds the caller's wait to deadline.
	timer *time.Timer
}

var callPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &call{done: make(chan struct{}, 1), timer: t}
}}

// pipeline coalesces concurrent decisions of one RedisStore into Redis
// pipelines: callers queue a call and wait; a sender goroutine takes up to
// maxBatch queued calls, sends them in one round trip (on a Cluster
// client, one per node that owns their slots) and answers each caller with
// its own result. Senders run only while calls are queued, at most
// maxInFlight at once: a call that finds fewer running starts one, and a
// sender returns when it finds the queue empty, so an idle store holds no
// goroutine. close waits for them.
type pipeline struct {
	store       *RedisStore
	maxBatch    int
	maxQueue    int
	maxInFlight int
	// perDecision sends one script per decision: on a Cluster client
	// the keys of one script must share a slot. Only a *redis.Client (one
	// node, or the master Sentinel names) is known to take a script
	// of many decisions.
	perDecision bool

	// sender waits for the sender goroutines.
	sender sync.WaitGroup

	// mu guards queue, running and closed.
	mu sync.Mutex
	// queue holds the calls waiting to be sent, oldest first.
	queue []*call
	// running is the number of sender goroutines.
	running int
	// closed is set by close: no sender starts after it.
	closed bool

	batches   atomic.Uint64
	decisions atomic.Uint64
	queueFull atomic.Uint64
	queueWait atomic.Uint64
}

func newPipeline(s *RedisStore, maxBatch, maxQueue, maxInFlight int) *pipeline {
	_, single := s.client.(*redis.Client)
	return &pipeline{store: s, maxBatch: maxBatch, maxQueue: maxQueue, maxInFlight: maxInFlight, perDecision: !single}
}

// errPipelineClosed tells Allow that the pipeline was closed and the
// decision must be made with a round trip of its own.
var errPipelineClosed = errors.New("handshake: redis pipeline closed")

// enqueue queues c and starts a sender unless maxInFlight run.
func (p *pipeline) enqueue(c *call) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errPipelineClosed
	}
	if len(p.queue) >= p.maxQueue {
		p.mu.Unlock()
		p.queueFull.Add(1)
		return ErrQueueFull
	}
	p.queue = append(p.queue, c)
	if p.running < p.maxInFlight {
		p.running++
		p.sender.Add(1)
		go p.run()
	}
	p.mu.Unlock()
	return nil
}

// run sends batches until the queue is empty.
func (p *pipeline) run() {
	defer p.sender.Done()
	var batch []*call
	for {
		batch = p.take(batch)
		if len(batch) == 0 {
			return
		}
		p.send(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// take moves up to maxBatch calls from the queue into batch (empty, its
// array reused) and returns it; an empty result means the queue was empty
// and the sender has been marked stopped.
func (p *pipeline) take(batch []*call) []*call {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.queue)
	if n == 0 {
		p.running--
		return batch
	}
	if n <= p.maxBatch {
		// The common case: take the whole queue by swapping arrays.
		batch, p.queue = p.queue, batch
		return batch
	}
	batch = append(batch, p.queue[:p.maxBatch]...)
	rest := copy(p.queue, p.queue[p.maxBatch:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	return batch
}

// close stops new calls from being queued and waits until the senders
// have answered every queued one and returned.
func (p *pipeline) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.sender.Wait()
}

func (p *pipeline) stats() PipelineStats {
	return PipelineStats{
		Batches:   p.batches.Load(),
		Decisions: p.decisions.Load(),
		QueueFull: p.queueFull.Load(),
		QueueWait: p.queueWait.Load(),
	}
}

// send runs one batch: calls whose callers are gone or out of time, or
// that waited MaxQueueWait, are answered without being sent; the others go
// out in one pipeline bounded by Timeout from now, when it is written, so
// that the bound measures Redis and not the queue (each caller still waits
// only until its own deadline). The round trip is reported to the store's
// health once. On a Cluster client each decision is one EVALSHA, and go-redis
// splits the pipeline by node; otherwise the whole batch is one EVALSHA of
// many decisions. Scripts that fail with NOSCRIPT (the script cache was
// flushed, or a replica took over) are retried once, in one more pipeline,
// after one SCRIPT LOAD. A failure fails only this batch's calls.
func (p *pipeline) send(batch []*call) {
	now := time.Now()
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			p.answer(c, Result{}, err)
			continue
		}
		if !now.Before(c.deadline) {
			p.answer(c, Result{}, context.DeadlineExceeded)
			continue
		}
		if now.After(c.sendBy) {
			p.queueWait.Add(1)
			p.answer(c, Result{}, ErrQueueWait)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	p.batches.Add(1)
	p.decisions.Add(uint64(len(live)))

	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), p.store.timeout)
	defer cancel()
	chunks := p.chunks(live)
	cmds := make([]*redis.Cmd, len(chunks))
	pipe := p.store.client.Pipeline()
	for i, ch := range chunks {
		cmds[i] = redis.NewCmd(ctx, scriptArgs(ch)...)
		_ = pipe.Process(ctx, cmds[i])
	}
	_, execErr := pipe.Exec(ctx)
	p.retryNoScript(ctx, chunks, cmds)

	p.store.health.RoundTrip(context.Background(), time.Since(sent), roundTripErr(execErr, cmds))
	failed := false
	for i, ch := range chunks {
		err := cmds[i].Err()
		vals, _ := cmds[i].Val().([]any)
		if err == nil && vals == nil && execErr != nil {
			// A hook failed the pipeline without failing its commands.
			err = execErr
		}
		if err == nil && len(vals) != 4*len(ch) {
			err = fmt.Errorf("script returned %d values for %d decisions", len(vals), len(ch))
		}
		failed = failed || err != nil
		for j, c := range ch {
			if err != nil {
				p.answer(c, Result{}, err)
				continue
			}
			r, err := decision(vals[4*j : 4*j+4])
			p.answer(c, r, err)
		}
	}
	if failed {
		p.store.followCluster()
	}
}

// roundTripErr is the outcome of one pipeline for the store's health: an
// error other than a timeout if any command has one (a node refused or
// reset the connection, or answered with an error), else a timeout if
// any timed out, else nil. NOSCRIPT left after a failed SCRIPT LOAD is
// an answer from a live Redis, not a failure of it: the load's own
// timeout, if any, was the trouble.
func roundTripErr(execErr error, cmds []*redis.Cmd) error {
	var timeout error
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil, redis.HasErrorPrefix(err, "NOSCRIPT"):
		case fallback.IsTimeout(err):
			timeout = err
		default:
			return err
		}
	}
	if timeout != nil {
		return timeout
	}
	// A hook may fail the pipeline without failing its commands.
	if redis.HasErrorPrefix(execErr, "NOSCRIPT") {
		return nil
	}
	return execErr
}

// chunks splits live into the calls of each script: one call per script
// unless the client is a *redis.Client (on a Cluster client the keys of
// one script must share a slot), otherwise as few scripts as the test
// clock allows (calls with different nowMs cannot share a script's clock;
// production calls all have 0).
func (p *pipeline) chunks(live []*call) [][]*call {
	if p.perDecision {
		out := make([][]*call, len(live))
		for i := range live {
			out[i] = live[i : i+1]
		}
		return out
	}
	var out [][]*call
	start := 0
	for i := 1; i <= len(live); i++ {
		if i == len(live) || live[i].nowMs != live[start].nowMs {
			out = append(out, live[start:i])
			start = i
		}
	}
	return out
}

// scriptArgs is the EVALSHA command for the decisions of calls (see
// limit.lua for the layout of KEYS and ARGV).
func scriptArgs(calls []*call) []any {
	n := len(calls)
	args := make([]any, 3, 3+4*n+1)
	args[0], args[1], args[2] = "evalsha", limitScript.Hash(), 2*n
	for _, c := range calls {
		args = append(args, &c.bucket, &c.ban)
	}
	// Every call of a batch usually has the same limit: box its numbers
	// once.
	var rate, burst any
	for i, c := range calls {
		if i == 0 || c.rate != calls[i-1].rate {
			rate = c.rate
		}
		if i == 0 || c.burst != calls[i-1].burst {
			burst = c.burst
		}
		args = append(args, rate, burst)
	}
	if calls[0].nowMs != 0 {
		args = append(args, calls[0].nowMs)
	}
	return args
}

// retryNoScript loads the script once and sends again, in one pipeline,
// the scripts of cmds that failed with NOSCRIPT, replacing their commands.
// If the load fails they keep their NOSCRIPT error.
func (p *pipeline) retryNoScript(ctx context.Context, chunks [][]*call, cmds []*redis.Cmd) {
	var pipe redis.Pipeliner
	for i, cmd := range cmds {
		if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			continue
		}
		if pipe == nil {
			if err := limitScript.Load(ctx, p.store.client).Err(); err != nil {
				return
			}
			pipe = p.store.client.Pipeline()
		}
		cmds[i] = redis.NewCmd(ctx, scriptArgs(chunks[i])...)
		_ = pipe.Process(ctx, cmds[i])
	}
	if pipe != nil {
		_, _ = pipe.Exec(ctx)
	}
}

// answer hands r and err to c's caller.
func (p *pipeline) answer(c *call, r Result, err error) {
	c.res, c.err = r, err
	c.done <- struct{}{}
}

// decision reads one decision's four integers from the script's answer.
func decision(vals []any) (Result, error) {
	var n [4]int64
	for i, x := range vals {
		v, ok := x.(int64)
		if !ok {
			return Result{}, fmt.Errorf("script returned %v, want integers", vals)
		}
		n[i] = v
	}
	return Result{
		Allowed:    n[0] == 1,
		RetryAfter: time.Duration(n[1]) * time.Millisecond,
		Excess:     n[2],
		Store:      StoreRedis,
		Banned:     n[3] == 1,
	}, nil
}

// allow queues the decision for key under l and waits for its answer,
// for ctx to end or for MaxQueueWait + Timeout, whichever comes first.
func (p *pipeline) allow(ctx context.Context, key string, l Limit) (Result, error) {
	c := callPool.Get().(*call)
	now := p.fill(ctx, c, key, l)
	if err := p.enqueue(c); err != nil {
		p.release(c)
		return Result{}, err
	}
	c.timer.Reset(c.deadline.Sub(now))
	select {
	case <-c.done:
		c.timer.Stop()
		r, err := c.res, c.err
		p.release(c)
		return r, err
	case <-ctx.Done():
		// The sender may still answer c: it is left to the collector.
		c.timer.Stop()
		return Result{}, ctx.Err()
	case <-c.timer.C:
		return Result{}, context.DeadlineExceeded
	}
}

// fill sets c up for the decision for key under l and returns the time it
// read.
func (p *pipeline) fill(ctx context.Context, c *call, key string, l Limit) time.Time {
	s := p.store
	now := time.Now()
	c.ctx = ctx
	c.sendBy = now.Add(s.queueWait)
	c.deadline = c.sendBy.Add(s.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	// bucketKey and banKey in one allocation.
	keys := s.prefix + "hs:{" + key + "}:" + l.Name + s.prefix + "ban:{" + key + "}"
	n := len(s.prefix) + len("hs:{") + len(key) + len("}:") + len(l.Name)
	c.bucket, c.ban = keys[:n], keys[n:]
	c.rate, c.burst = l.Rate, l.Burst
	if s.nowMs != nil {
		c.nowMs = s.nowMs()
	}
	return now
}

// release clears c and puts it back in the pool. Only a call that the
// sender will not touch again may be released.
func (p *pipeline) release(c *call) {
	c.ctx, c.bucket, c.ban, c.nowMs, c.res, c.err = nil, "", "", 0, Result{}, nil
	callPool.Put(c)
}
