package main

import (
	"flag"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/history/streams"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
)

// historySettings bound the histories of destinations whose rule has
// history, and the recoveries from them. Each default is the named
// constant of package history or history/streams, whose comment gives
// its reason.
type historySettings struct {
	recoveryMax         int
	recoveryInterval    time.Duration
	recoveryMaxFlights  int
	recoveryBuffer      int
	recoveryBufferBytes int

	historyMemoryDestinations int
	historyMemoryBytes        int64
	historyEpochTTL           time.Duration
	historyTimeout            time.Duration
	historyQueue              int
	historyQueueBytes         int64
	historyBatch              int
}

// historyFlagNames are the flags historyFlags registers, in -h order.
var historyFlagNames = []string{
	"recovery-max", "recovery-interval", "recovery-max-flights", "recovery-buffer", "recovery-buffer-bytes",
	"history-memory-destinations", "history-memory-bytes",
	"history-epoch-ttl", "history-timeout", "history-queue", "history-queue-bytes", "history-batch",
}

// historyFlags registers the history settings.
func (s *settings) historyFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.recoveryMax, "recovery-max", 0, fmt.Sprintf("most messages one SUBSCRIBE with a position replays; a client that missed more is told recovered:false (too_many) and reloads; at most -outbound-queue, since a replay goes through the session's outbound queue (0: %d, or -outbound-queue if smaller)", history.DefaultMaxRecovery))
	fs.DurationVar(&s.recoveryInterval, "recovery-interval", history.DefaultInterval, "least time between two history reads of one destination by this instance: a herd of clients recovering one room shares reads, one per interval")
	fs.IntVar(&s.recoveryMaxFlights, "recovery-max-flights", history.DefaultMaxFlights, "most destinations whose history reads this instance tracks at once; a recovery past it reads alone, uncoalesced, and is counted")
	fs.IntVar(&s.recoveryBuffer, "recovery-buffer", history.DefaultMaxBuffer, "most live messages one recovering subscription holds while its history is read; one more settles it at once as recovered:false (overrun)")
	fs.IntVar(&s.recoveryBufferBytes, "recovery-buffer-bytes", 0, fmt.Sprintf("most bytes of live messages one recovering subscription holds while its history is read; at most -outbound-bytes, where they go next (0: %d, or -outbound-bytes if smaller)", history.DefaultMaxBufferBytes))
	fs.IntVar(&s.historyMemoryDestinations, "history-memory-destinations", history.DefaultMaxDestinations, "without -relay: most destinations with a history in process memory; past it the one appended to least recently loses its history (a new epoch)")
	fs.Int64Var(&s.historyMemoryBytes, "history-memory-bytes", history.DefaultMaxBytes, "without -relay: most bytes of history in process memory, across destinations; past it whole histories are evicted, least recently appended first")
	fs.DurationVar(&s.historyEpochTTL, "history-epoch-ttl", streams.DefaultEpochTTL, "with -relay: how long a destination's epoch and last offset outlive its last message in Redis, so a client away from a quiet room learns it missed nothing")
	fs.DurationVar(&s.historyTimeout, "history-timeout", streams.DefaultTimeout, "with -relay: bound on one history read or one pipeline of appends in Redis, and on a recovery's wait for the relay's subscription to the destination's channel before it reads; a read past it is recovered:false (unavailable)")
	fs.IntVar(&s.historyQueue, "history-queue", streams.DefaultQueueSize, "with -relay: messages of destinations with history queued for Redis; one more is dropped and counted")
	fs.Int64Var(&s.historyQueueBytes, "history-queue-bytes", streams.DefaultQueueBytes, "with -relay: bytes of those queued messages")
	fs.IntVar(&s.historyBatch, "history-batch", streams.DefaultBatchSize, "with -relay: most history messages sent to Redis in one pipeline")
}

// validateHistory checks the settings historyFlags registers.
func (s *settings) validateHistory() error {
	switch {
	case s.recoveryMax < 0:
		return badSetting("recovery-max", s.recoveryMax, "must not be negative (0: the default)")
	case s.recoveryBufferBytes < 0:
		return badSetting("recovery-buffer-bytes", s.recoveryBufferBytes, "must not be negative (0: the default)")
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"recovery-max-flights", int64(s.recoveryMaxFlights)},
		{"recovery-buffer", int64(s.recoveryBuffer)},
		{"history-memory-destinations", int64(s.historyMemoryDestinations)},
		{"history-memory-bytes", s.historyMemoryBytes},
		{"history-queue", int64(s.historyQueue)},
		{"history-queue-bytes", s.historyQueueBytes},
		{"history-batch", int64(s.historyBatch)},
		{"recovery-interval", int64(s.recoveryInterval)},
		{"history-epoch-ttl", int64(s.historyEpochTTL)},
		{"history-timeout", int64(s.historyTimeout)},
	} {
		if c.v <= 0 {
			return badSetting(c.name, c.v, "must be positive")
		}
	}
	switch {
	case s.recoveryMax > history.MaxKeep:
		return badSetting("recovery-max", s.recoveryMax, fmt.Sprintf("must be at most %d", history.MaxKeep))
	case s.recoveryMax > s.outboundQueue:
		return badSetting("recovery-max", s.recoveryMax, fmt.Sprintf("is above -outbound-queue %d: a replay goes through the session's outbound queue, and would close it as a slow consumer", s.outboundQueue))
	case s.recoveryBufferBytes > s.outboundBytes:
		return badSetting("recovery-buffer-bytes", s.recoveryBufferBytes, fmt.Sprintf("is above -outbound-bytes %d: what is held goes to the session's outbound queue next", s.outboundBytes))
	}
	return nil
}

// recoveryLimits are -recovery-max and -recovery-buffer-bytes in force:
// their defaults, lowered to -outbound-queue and -outbound-bytes when
// those are smaller.
func (s *settings) recoveryLimits() (maxRecovery, bufferBytes int) {
	maxRecovery, bufferBytes = s.recoveryMax, s.recoveryBufferBytes
	if maxRecovery == 0 {
		maxRecovery = min(history.DefaultMaxRecovery, s.outboundQueue)
	}
	if bufferBytes == 0 {
		bufferBytes = min(history.DefaultMaxBufferBytes, s.outboundBytes)
	}
	return maxRecovery, bufferBytes
}

// appHistory is what the history takes on this instance: the reader of
// recoveries, its store (Redis Streams with -relay, else memory), the
// Redis publisher, and the recoveries' counts.
type appHistory struct {
	reader    *history.Reader
	memory    *history.MemoryStore // nil with -relay
	streams   *streams.Store       // nil without -relay
	publisher *streams.Publisher   // nil without -relay
	counts    *recoveryCounts
}

// newHistory builds the history of the destinations whose rule has one,
// for server.Config.History: with -relay, Redis Streams shared by every
// instance, appended and published by one script on the relay's channels;
// without, process memory. It sets a.history.
func (a *app) newHistory(st *settings, b *broker.Broker) (server.History, error) {
	h := &appHistory{counts: newRecoveryCounts()}
	var store history.Store
	var log server.HistoryLog
	if a.relay != nil {
		s, err := streams.New(streams.Config{Client: a.redis, Channel: a.relay.Channel, Sharded: a.relay.Sharded(),
			Timeout: st.historyTimeout, EpochTTL: st.historyEpochTTL})
		if err != nil {
			return server.History{}, fmt.Errorf("-history-*: %w", err)
		}
		p, err := s.NewPublisher(streams.PublisherConfig{QueueSize: st.historyQueue, QueueBytes: st.historyQueueBytes, BatchSize: st.historyBatch})
		if err != nil {
			return server.History{}, fmt.Errorf("-history-queue*: %w", err)
		}
		a.relay.SetHistory(p)
		h.streams, h.publisher, store, log = s, p, s, a.relay
	} else {
		m, err := history.NewMemoryStore(history.MemoryConfig{MaxDestinations: st.historyMemoryDestinations, MaxBytes: st.historyMemoryBytes})
		if err != nil {
			return server.History{}, fmt.Errorf("-history-memory-*: %w", err)
		}
		h.memory, store, log = m, m, countedLog{server.NewMemoryHistory(m, b), &h.counts.memoryAppended}
	}
	maxRecovery, bufferBytes := st.recoveryLimits()
	r, err := history.NewReader(history.ReaderConfig{Store: store, Interval: st.recoveryInterval,
		MaxRecovery: maxRecovery, MaxFlights: st.recoveryMaxFlights})
	if err != nil {
		h.close()
		return server.History{}, fmt.Errorf("-recovery-*: %w", err)
	}
	h.reader = r
	a.history = h
	a.registry.MustRegister(metrics.NewHistoryCollector(h.stats))
	return server.History{Log: log, Reader: r, MaxBuffer: st.recoveryBuffer, MaxBufferBytes: bufferBytes, Observer: h.counts,
		// Waiting for the relay's channel is part of the read.
		LiveWait: st.historyTimeout}, nil
}

// close stops the reader and sends what the publisher still holds; call
// it before the relay and the Redis client close.
func (h *appHistory) close() {
	if h == nil {
		return
	}
	if h.reader != nil {
		h.reader.Close()
	}
	if h.publisher != nil {
		h.publisher.Close()
	}
}

// stats gathers the history's figures for the metrics.
func (h *appHistory) stats() metrics.HistoryStats {
	var st metrics.HistoryStats
	rs := h.reader.Stats()
	st.Reads, st.Shared, st.Uncoalesced, st.ReadErrors = rs.Reads, rs.Shared, rs.Uncoalesced, rs.Failed
	if h.memory != nil {
		ms := h.memory.Stats()
		st.MemoryBytes, st.MemoryDestinations, st.MemoryEvicted = ms.Bytes, ms.Destinations, ms.Evicted
		st.Appended = h.counts.memoryAppended.Load()
	}
	if h.streams != nil {
		ss := h.streams.Stats()
		st.Appended, st.Epochs = ss.Appended, ss.Epochs
		ps := h.publisher.Stats()
		st.QueueFull, st.RedisFailed = ps.Dropped, ps.Failed
	}
	c := h.counts
	st.Recovered, st.Replayed, st.Gaps = c.recovered.Load(), c.replayed.Load(), c.gaps.Load()
	st.NotRecovered = make([]uint64, len(c.notRecovered))
	for i := range c.notRecovered {
		st.NotRecovered[i] = c.notRecovered[i].Load()
	}
	return st
}

// recoveryCounts counts what recoveries do (server.HistoryObserver),
// not_recovered by the reason's place in outcome.RecoveryReasons.
type recoveryCounts struct {
	reasons        []string
	recovered      atomic.Uint64
	notRecovered   []atomic.Uint64
	replayed       atomic.Uint64
	gaps           atomic.Uint64
	memoryAppended atomic.Uint64
}

var _ server.HistoryObserver = (*recoveryCounts)(nil)

func newRecoveryCounts() *recoveryCounts {
	r := outcome.RecoveryReasons()
	return &recoveryCounts{reasons: r, notRecovered: make([]atomic.Uint64, len(r))}
}

// Recovery counts a settled recovery.
func (c *recoveryCounts) Recovery(recovered bool, reason history.Reason, replayed int) {
	c.replayed.Add(uint64(max(replayed, 0)))
	if recovered {
		c.recovered.Add(1)
		return
	}
	if i := slices.Index(c.reasons, string(reason)); i >= 0 {
		c.notRecovered[i].Add(1)
	}
}

// RecoveryGap counts a live message that did not follow.
func (c *recoveryCounts) RecoveryGap(history.Reason) { c.gaps.Add(1) }

// countedLog counts the messages a memory history appended, which the
// memory store does not.
type countedLog struct {
	server.HistoryLog
	appended *atomic.Uint64
}

// Append appends m and counts it.
func (l countedLog) Append(m *broker.Message, r history.Retention) (int, bool) {
	n, ok := l.HistoryLog.Append(m, r)
	if ok {
		l.appended.Add(1)
	}
	return n, ok
}

// historyOf returns the history of the rule in force for dest.
func (r *ruleSet) historyOf(dest string) *history.Retention {
	ret, ok := r.current.Load().History(dest)
	if !ok {
		return nil
	}
	return &ret
}
