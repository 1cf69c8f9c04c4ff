package attack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/stompframe"
)

// Attacker-side bounds, each with its reason.
const (
	// probeTimeout bounds the read that tells, after an attack, whether
	// a session that never read is still open: a closed connection
	// answers at once, an open one with nothing queued never does.
	probeTimeout = time.Second
	// probeBytes bounds what that read takes in: a server that queued
	// gigabytes of replies for the session is still sending, so open.
	probeBytes = 64 << 20
	// retryPause separates handshake attempts refused with 429: a tenth
	// of a second keeps one client at the limiter's rate without
	// spinning.
	retryPause = 100 * time.Millisecond
	// maxNotes bounds the example errors a report keeps per attack.
	maxNotes = 3
)

// attackEnv is what an attack gets from the run: the honest room, the
// settings, and the helpers that open its sessions.
type attackEnv struct {
	cfg  *abuseConfig
	run  *scenario.LoadRun // the honest sessions' run, for subscribe and its clock
	room string            // the honest room's destination
	d    *client.Dialer
	// sources hands out attacker source addresses (blockAbuse) over the
	// whole scenario, so that no two sessions share limiter state.
	sources *atomic.Int64
	spread  bool
}

// dest names an attack's own destination.
func (e *attackEnv) dest(name string) string { return e.cfg.TopicPrefix + "abuse." + name }

// nextSource returns a fresh source address, or the zero Addr (system
// chosen) when not spreading.
func (e *attackEnv) nextSource() netip.Addr {
	if !e.spread {
		return netip.Addr{}
	}
	return scenario.SourceAddr(scenario.BlockAbuse, int(e.sources.Add(1)))
}

// oneClient is the single source address of attacks that come from one
// client: sessions-per-ip and http-idle. It is the last address of the
// abuse block, never handed out by nextSource in a realistic run.
func (e *attackEnv) oneClient() netip.Addr {
	if !e.spread {
		return netip.Addr{}
	}
	return scenario.SourceAddr(scenario.BlockAbuse, scenario.MaxSources-1)
}

// noteList keeps a few distinct example errors for a report. The zero
// value is empty; it is safe for concurrent use.
type noteList struct {
	mu   sync.Mutex
	list []string // guarded by mu
}

// add keeps s unless maxNotes are kept already or s is one of them.
func (n *noteList) add(s string) {
	n.mu.Lock()
	if len(n.list) < maxNotes && !slices.Contains(n.list, s) {
		n.list = append(n.list, s)
	}
	n.mu.Unlock()
}

// all returns a copy of the notes kept.
func (n *noteList) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.list)
}

// attackers are the sessions of one attack. Sessions that read have a
// sink (a subscriber that counts nothing) that notices the server's close
// while the attack runs; sessions that never read are probed after it.
type attackers struct {
	env     *attackEnv
	done    atomic.Bool // set before the sessions are closed
	readers sync.WaitGroup
	written atomic.Int64 // frames (or requests) written
	refused atomic.Int64 // sessions the server refused to open
	rcvbuf  int          // socket receive buffer of the sessions opened (0: the system's)

	mu       sync.Mutex
	sessions []*attackSession // guarded by mu
	notes    noteList
}

// attackSession is one attacker session.
type attackSession struct {
	conn *client.Conn
	sink *load.Subscriber // nil for a session that never reads
	// writeFailed is set when a write failed before the attack ended.
	writeFailed atomic.Bool
}

func newAttackers(env *attackEnv) *attackers { return &attackers{env: env} }

// note keeps an example error for the report.
func (a *attackers) note(s string) { a.notes.add(s) }

// open dials one session from local offering heartBeat; with reading it
// gets a sink. A handshake refused with 429 is retried every retryPause
// until ctx ends.
func (a *attackers) open(ctx context.Context, local netip.Addr, heartBeat string, reading bool) (*attackSession, error) {
	hc := client.HTTPClientFrom(local)
	if a.rcvbuf > 0 {
		hc = httpClientBuffered(local, a.rcvbuf)
	}
	if hc != nil {
		defer hc.CloseIdleConnections()
	}
	for {
		c, err := a.env.d.Dial(ctx, hc, heartBeat)
		if err == nil {
			return a.adopt(c, reading), nil
		}
		var he *client.HandshakeError
		if !errors.As(err, &he) || he.Status != http.StatusTooManyRequests {
			a.refused.Add(1)
			return nil, err
		}
		a.refused.Add(1)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(retryPause):
		}
	}
}

// adopt tracks an open session and starts its sink when it reads.
func (a *attackers) adopt(c *client.Conn, reading bool) *attackSession {
	s := &attackSession{conn: c}
	if reading {
		a.startSink(s)
	}
	a.mu.Lock()
	a.sessions = append(a.sessions, s)
	a.mu.Unlock()
	return s
}

// startSink starts reading s: from then on, what the server sends is
// only checked for ERROR frames and the close. It must be called at most
// once, before the session is shared with another goroutine.
func (a *attackers) startSink(s *attackSession) {
	s.sink = &load.Subscriber{Conn: s.conn, Class: &load.Class{Name: "attacker"}}
	a.readers.Add(1)
	go func() {
		defer a.readers.Done()
		s.sink.Run(a.env.run.Clock, &a.done)
	}()
}

// openMany opens n reading sessions, each from a fresh source address.
func (a *attackers) openMany(ctx context.Context, n int, heartBeat string, reading bool) ([]*attackSession, error) {
	out := make([]*attackSession, n)
	err := scenario.Parallel(ctx, n, scenario.DialConcurrency, func(i int) error {
		s, err := a.open(ctx, a.env.nextSource(), heartBeat, reading)
		out[i] = s
		return err
	})
	return out, err
}

// write sends b on s as one message of type typ and counts frames
// frames; it records the first failure. Writes are not bounded by a
// timeout: coder/websocket closes the connection when a write's context
// ends, which would hide what the server did. closeAll unblocks them.
func (a *attackers) write(s *attackSession, typ websocket.MessageType, b []byte, frames int64) error {
	if err := s.conn.WS.Write(context.Background(), typ, b); err != nil {
		if !a.done.Load() {
			s.writeFailed.Store(true)
			a.note("write: " + err.Error())
		}
		return err
	}
	a.written.Add(frames)
	return nil
}

// outcome tallies how the attack's sessions stand once the attack is
// over: closed by the server (and how) or still open. Sessions without a
// sink are probed with a read.
func (a *attackers) outcome(rep *attackerReport) {
	a.mu.Lock()
	sessions := slices.Clone(a.sessions)
	a.mu.Unlock()
	how := make([]string, len(sessions))
	errs := make([]string, len(sessions))
	_ = scenario.Parallel(context.Background(), len(sessions), scenario.DialConcurrency, func(i int) error {
		s := sessions[i]
		switch {
		case s.sink != nil && s.sink.Gone.Load():
			how[i], errs[i] = s.sink.Ended, s.sink.LastError
		case s.sink != nil:
		default:
			how[i], errs[i] = probe(s.conn, s.writeFailed.Load())
		}
		return nil
	})
	rep.Sessions += len(sessions)
	for i := range sessions {
		if how[i] == "" {
			rep.Open++
			continue
		}
		rep.ClosedByServer++
		if rep.Closes == nil {
			rep.Closes = map[string]int{}
		}
		rep.Closes[how[i]]++
		if errs[i] != "" && !slices.Contains(rep.ErrorFrames, errs[i]) && len(rep.ErrorFrames) < maxNotes {
			rep.ErrorFrames = append(rep.ErrorFrames, errs[i])
		}
	}
	rep.FramesWritten += a.written.Load()
	rep.Refused += a.refused.Load()
	rep.Notes = append(rep.Notes, a.notes.all()...)
}

// closeAll ends every session and waits for the sinks.
func (a *attackers) closeAll() {
	a.done.Store(true)
	a.mu.Lock()
	sessions := a.sessions
	a.sessions = nil
	a.mu.Unlock()
	for _, s := range sessions {
		s.conn.Close()
	}
	a.readers.Wait()
}

// probe reads what a session that never read has waiting, up to
// probeTimeout and probeBytes: a close (how it ended, and the last ERROR
// frame's message) or nothing more (still open: how is ""). writeFailed
// says a write already failed, so the connection is gone even when no
// close frame is found.
func probe(c *client.Conn, writeFailed bool) (how, errMsg string) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var n int
	for n < probeBytes {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil && !writeFailed {
				return "", errMsg // nothing more came: open
			}
			return load.DescribeEnd(err), errMsg
		}
		n += len(msg)
		// Only a message that starts with an ERROR frame is decoded: a
		// queue of replies is read past, not parsed.
		if strings.HasPrefix(string(msg[:min(len(msg), 6)]), stompframe.CommandError+"\n") {
			dec := stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: client.ReadLimit})
			dec.Feed(msg)
			for f, _ := dec.Next(); f != nil; f, _ = dec.Next() {
				if f.Command == stompframe.CommandError {
					errMsg = f.Get("message")
				}
			}
		}
	}
	return "", errMsg
}

// sleepUntil waits until t or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// paceUntil calls send with the frames due at rate per second from start
// until end, waking every pacePeriod(rate); it returns at end, when ctx
// ends or when send fails.
func paceUntil(ctx context.Context, start, end time.Time, rate float64, send func(n int64) error) {
	period := load.PacePeriod(rate)
	var sent int64
	if !sleepUntil(ctx, start) {
		return
	}
	for {
		now := time.Now()
		if now.After(end) {
			now = end
		}
		if n := load.Due(rate, now.Sub(start), sent); n > 0 {
			if send(n) != nil {
				return
			}
			sent += n
		}
		if !now.Before(end) || !sleepUntil(ctx, time.Now().Add(min(period, time.Until(end)))) {
			return
		}
	}
}

// closesText renders a close tally, most frequent first.
func closesText(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || all[i].v == all[j].v && all[i].k < all[j].k })
	var parts []string
	for _, e := range all {
		parts = append(parts, fmt.Sprintf("%d× %s", e.v, e.k))
	}
	return strings.Join(parts, "; ")
}
