package relay

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
)

// maxCachedChannels bounds the publisher's destination-to-channel cache;
// it is emptied when it grows past this, which costs one string build
// per destination afterwards.
const maxCachedChannels = 4096

// publisher drains the outbound queue: it takes what is queued, up to
// BatchSize messages, sends them as one pipeline of PUBLISH (or SPUBLISH)
// commands and waits for the answers before the next batch. One
// goroutine and one pipeline at a time keep each publisher's messages in
// order. On Close it publishes what is still queued, then returns.
//
// While Redis is unreachable and no message comes to prove the
// publisher's connections, it checks them with PING every RetryInterval,
// so that the outage can end (see outage) without waiting for traffic.
func (r *Relay) publisher() {
	defer r.wg.Done()
	p := &batch{
		relay:    r,
		pipe:     r.cfg.Client.Pipeline(),
		msgs:     make([]*broker.Message, 0, r.cfg.BatchSize),
		channels: make(map[string]string),
	}
	probe := time.NewTimer(time.Hour)
	defer probe.Stop()
	for {
		var check <-chan time.Time
		if r.outage.suspected(pathPublish) {
			probe.Reset(r.cfg.RetryInterval)
			check = probe.C
		}
		select {
		case q := <-r.out:
			p.msgs = append(p.msgs, r.take(q))
		case <-r.stop:
			p.drainAndFlush()
			return
		case <-check:
			r.ping()
			continue
		}
		p.fill()
		p.flush()
	}
}

// ping checks the publisher's path to Redis.
func (r *Relay) ping() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	err := r.cfg.Client.Ping(ctx).Err()
	cancel()
	if err != nil {
		r.outage.failed(pathPublish, "ping", err)
		return
	}
	r.outage.ok(pathPublish)
}

// batch is the publisher's reusable state.
type batch struct {
	relay    *Relay
	pipe     redis.Pipeliner
	msgs     []*broker.Message
	arena    []byte            // encoded payloads of msgs, back to back
	ends     []int             // ends[i] is where msgs[i]'s payload ends in arena
	channels map[string]string // destination -> channel
}

// fill adds queued messages without waiting, up to BatchSize.
func (p *batch) fill() {
	for len(p.msgs) < cap(p.msgs) {
		select {
		case q := <-p.relay.out:
			p.msgs = append(p.msgs, p.relay.take(q))
		default:
			return
		}
	}
}

// drainAndFlush publishes everything still queued, batch by batch.
func (p *batch) drainAndFlush() {
	for {
		p.fill()
		if len(p.msgs) == 0 {
			return
		}
		p.flush()
	}
}

// flush publishes p.msgs in one pipeline and counts each message as
// relayed or dropped.
func (p *batch) flush() {
	r := p.relay
	p.arena, p.ends = p.arena[:0], p.ends[:0]
	now := time.Now()
	tooLarge := 0
	for _, m := range p.msgs {
		start := len(p.arena)
		p.arena = appendMessage(p.arena, r.signer, now, r.instance, m)
		if len(p.arena)-start > r.cfg.MaxPayload {
			// Every receiver would drop it unread: count it here, where
			// it is known, instead of on every instance.
			p.arena = p.arena[:start]
			tooLarge++
		}
		p.ends = append(p.ends, len(p.arena))
	}
	if tooLarge > 0 {
		r.cfg.Observer.RelayDropped(DropTooLarge, tooLarge)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	start := 0
	for i, m := range p.msgs {
		payload := p.arena[start:p.ends[i]:p.ends[i]]
		start = p.ends[i]
		if len(payload) == 0 {
			continue // too large, dropped above
		}
		if r.sharded {
			p.pipe.SPublish(ctx, p.channel(m.Destination), payload)
		} else {
			p.pipe.Publish(ctx, p.channel(m.Destination), payload)
		}
	}
	cmds, err := p.pipe.Exec(ctx)
	cancel()
	failed := 0
	for _, c := range cmds {
		if c.Err() != nil {
			failed++
		}
	}
	if len(cmds) == 0 && err != nil {
		failed = len(p.msgs) - tooLarge
	}
	if ok := len(p.msgs) - tooLarge - failed; ok > 0 {
		r.cfg.Observer.RelayMessages(DirectionOut, ok)
	}
	if failed > 0 {
		r.cfg.Observer.RelayDropped(DropRedisError, failed)
		r.outage.failed(pathPublish, "publish", err)
		// A master may have failed over: go-redis learns of a new
		// master only from a MOVED answer or its periodic reload, and a
		// dead or paused master answers nothing.
		r.reloadTopology()
	} else {
		r.outage.ok(pathPublish)
	}
	clear(p.msgs)
	p.msgs = p.msgs[:0]
}

// channel returns dest's channel from the cache.
func (p *batch) channel(dest string) string {
	if c, ok := p.channels[dest]; ok {
		return c
	}
	if len(p.channels) >= maxCachedChannels {
		clear(p.channels)
	}
	c := p.relay.Channel(dest)
	p.channels[dest] = c
	return c
}
