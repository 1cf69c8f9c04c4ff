package relay

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// group is one shard group's subscriptions: on Redis Cluster every
// channel of a group is in one slot, so on one master, carried by one
// connection. Without Cluster there is one group. A group is owned by the
// control goroutine.
type group struct {
	id int
	// channels are the group's wanted channels; a channel is true once
	// the current connection has Redis' confirmation for it (live).
	// Change them with setLive, drop and allDown, which keep live.
	channels map[string]bool
	// live counts the true entries of channels, so that down, read on
	// every control pass, does not walk them.
	live int
	// conn carries the channels; nil while waiting for retryAt.
	conn *subConn
	// retryAt is when to connect again while conn is nil.
	retryAt time.Time
	// unsubs counts this relay's own unsubscribes on conn that Redis has
	// not confirmed yet, by channel, to tell them from the unsubscribes
	// Redis sends by itself when a slot moves.
	unsubs map[string]int
	// lost is set while the group is being subscribed again after a
	// loss; it ends when every channel is live.
	lost bool
	// reason is why it was lost.
	reason string
}

// down returns the number of wanted channels that are not live.
func (g *group) down() int { return len(g.channels) - g.live }

// setLive makes ch wanted, live or not.
func (g *group) setLive(ch string, live bool) {
	was, ok := g.channels[ch]
	if ok && was == live {
		return
	}
	g.channels[ch] = live
	switch {
	case live:
		g.live++
	case was:
		g.live--
	}
}

// drop makes ch unwanted.
func (g *group) drop(ch string) {
	if g.channels[ch] {
		g.live--
	}
	delete(g.channels, ch)
}

// allDown marks every channel not live, for a new connection.
func (g *group) allDown() {
	for ch := range g.channels {
		g.channels[ch] = false
	}
	g.live = 0
}

// subs is the control goroutine's state.
type subs struct {
	groups map[int]*group
	// subscribed are the destinations whose channels are wanted.
	subscribed map[string]struct{}
	storm      storm
}

// control applies subscription changes recorded by the hooks, in one
// goroutine, so that a destination's SUBSCRIBE and UNSUBSCRIBE reach Redis
// in the order the broker decided them. It owns the subscription
// connections (one per shard group in use, each with a receiver
// goroutine), follows what the receivers report (confirmations,
// unsubscribes Redis sent by itself, failed connections) and replaces a
// group's connection when it is lost: on Redis Cluster on the master that
// owns the group's slot now.
func (r *Relay) control() {
	defer r.wg.Done()
	s := &subs{groups: make(map[int]*group), subscribed: make(map[string]struct{})}
	defer func() {
		for _, g := range s.groups {
			r.closeConn(g)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var retry <-chan time.Time
		if next, ok := s.nextRetry(); ok {
			timer.Reset(time.Until(next))
			retry = timer.C
		}
		select {
		case <-r.stop:
			return
		case <-r.kick:
		case <-retry:
		}
		r.handleEvents(s)
		r.apply(s, r.takeChanges())
		r.connectDue(s, time.Now())
		r.cfg.Observer.RelaySubscriptions(len(s.subscribed))
		down := 0
		for _, g := range s.groups {
			down += g.down()
		}
		r.cfg.Observer.RelaySubscriptionsDown(down)
		s.storm.update(r, s)
	}
}

// nextRetry returns the earliest retryAt of a group waiting to connect.
func (s *subs) nextRetry() (time.Time, bool) {
	var next time.Time
	found := false
	for _, g := range s.groups {
		if g.conn == nil && len(g.channels) > 0 && (!found || g.retryAt.Before(next)) {
			next, found = g.retryAt, true
		}
	}
	return next, found
}

// change is one destination's wanted state.
type change struct {
	dest string
	want bool
}

// takeChanges returns the destinations whose state changed and empties the
// set.
func (r *Relay) takeChanges() []change {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]change, 0, len(r.changed))
	for dest := range r.changed {
		_, want := r.want[dest]
		out = append(out, change{dest, want})
	}
	clear(r.changed)
	return out
}

// apply subscribes and unsubscribes, one command per shard group and
// direction. A group without a connection gets one with all its channels.
func (r *Relay) apply(s *subs, changes []change) {
	type ops struct{ sub, unsub []string }
	byGroup := make(map[int]*ops)
	for _, c := range changes {
		_, have := s.subscribed[c.dest]
		if have == c.want {
			continue
		}
		id := r.group(c.dest)
		g := s.groups[id]
		if g == nil {
			g = &group{id: id, channels: make(map[string]bool), unsubs: make(map[string]int)}
			s.groups[id] = g
		}
		o := byGroup[id]
		if o == nil {
			o = &ops{}
			byGroup[id] = o
		}
		ch := r.Channel(c.dest)
		if c.want {
			s.subscribed[c.dest] = struct{}{}
			g.setLive(ch, false)
			o.sub = append(o.sub, ch)
		} else {
			delete(s.subscribed, c.dest)
			g.drop(ch)
			o.unsub = append(o.unsub, ch)
		}
	}
	var now time.Time
	for id, o := range byGroup {
		g := s.groups[id]
		if g.conn == nil {
			// A new group connects below (retryAt is zero); one waiting
			// to retry subscribes to all its channels when it does, and
			// one left without channels is dropped.
			if len(g.channels) == 0 {
				delete(s.groups, id)
				r.outage.remove(groupPath(id))
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		var err error
		if len(o.unsub) > 0 {
			for _, ch := range o.unsub {
				g.unsubs[ch]++
			}
			err = r.unsubscribe(ctx, g.conn.ps, o.unsub)
		}
		if len(o.sub) > 0 {
			err = errors.Join(err, r.subscribe(ctx, g.conn.ps, o.sub))
		}
		cancel()
		if err != nil {
			r.outage.failed(g.conn.path, "subscribe", err)
			if now.IsZero() {
				now = time.Now()
			}
			r.lose(s, g, ResubscribeConnection, now)
		}
	}
}

// connectDue gives a connection to every group with channels whose retry
// time has come. On Redis Cluster it first reloads the cluster's slot
// map, once for all of them, so that each connects to its slot's master
// as the cluster sees it now.
func (r *Relay) connectDue(s *subs, now time.Time) {
	var due []*group
	for _, g := range s.groups {
		if g.conn == nil && len(g.channels) > 0 && !g.retryAt.After(now) {
			due = append(due, g)
		}
	}
	if len(due) == 0 {
		return
	}
	if r.sharded {
		r.reloadTopology()
	}
	for _, g := range due {
		if err := r.connect(g); err != nil {
			r.outage.failed(groupPath(g.id), "subscribe", err)
			g.retryAt = time.Now().Add(r.cfg.RetryInterval)
		}
	}
}

// connect opens a connection for g, subscribes it to all of g's channels
// and starts its receiver. The channels become live as the receiver
// reports Redis' confirmations.
func (r *Relay) connect(g *group) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	chans := make([]string, 0, len(g.channels))
	for ch := range g.channels {
		chans = append(chans, ch)
	}
	g.allDown()
	var ps *redis.PubSub
	if cc, ok := r.cfg.Client.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, chans[0])
		if err != nil {
			return err
		}
		// A connection of the master's own client: it stays on that
		// master, and the relay, not go-redis, decides where to go when
		// it fails.
		ps = node.SSubscribe(ctx)
	} else {
		ps = r.cfg.Client.Subscribe(ctx)
	}
	if err := r.subscribe(ctx, ps, chans); err != nil {
		_ = ps.Close()
		return err
	}
	c := &subConn{group: g.id, ps: ps, path: groupPath(g.id)}
	r.outage.add(c.path)
	g.conn = c
	clear(g.unsubs)
	r.wg.Add(1)
	go r.receive(c)
	return nil
}

// lose closes g's connection and schedules a new one: at once when the
// connection had worked (a slot moved, a node failed), after
// RetryInterval when it never had (Redis is still unreachable). A group
// without channels is dropped instead.
func (r *Relay) lose(s *subs, g *group, reason string, now time.Time) {
	proven := g.conn != nil && g.conn.proven
	r.closeConn(g)
	if len(g.channels) == 0 {
		delete(s.groups, g.id)
		r.outage.remove(groupPath(g.id))
		return
	}
	g.allDown()
	if proven {
		g.retryAt = now
	} else {
		g.retryAt = now.Add(r.cfg.RetryInterval)
	}
	if !g.lost {
		g.lost, g.reason = true, reason
		s.storm.lost(reason)
	}
	r.cfg.Observer.RelayResubscribes(reason, 1)
}

// closeConn closes g's connection, if any; its receiver ends.
func (r *Relay) closeConn(g *group) {
	if g.conn == nil {
		return
	}
	g.conn.closing.Store(true)
	_ = g.conn.ps.Close()
	g.conn = nil
}

// handleEvents applies what the receivers reported.
func (r *Relay) handleEvents(s *subs) {
	var now time.Time
	for _, e := range r.takeEvents() {
		g := s.groups[e.conn.group]
		if g == nil || g.conn != e.conn {
			continue // from a connection replaced since
		}
		switch e.kind {
		case eventSubscribed:
			e.conn.proven = true
			if _, want := g.channels[e.channel]; want {
				g.setLive(e.channel, true)
			}
		case eventUnsubscribed:
			if g.unsubs[e.channel] > 0 {
				g.unsubs[e.channel]--
				if g.unsubs[e.channel] == 0 {
					delete(g.unsubs, e.channel)
				}
				continue
			}
			if _, want := g.channels[e.channel]; want {
				// Redis dropped a channel this relay wants: its slot
				// is no longer this master's.
				if now.IsZero() {
					now = time.Now()
				}
				r.lose(s, g, ResubscribeMoved, now)
			}
		case eventFailed:
			if now.IsZero() {
				now = time.Now()
			}
			r.lose(s, g, e.reason, now)
		}
	}
	for _, g := range s.groups {
		if g.lost && g.conn != nil && g.down() == 0 {
			g.lost = false
		}
	}
}

func (r *Relay) subscribe(ctx context.Context, ps *redis.PubSub, channels []string) error {
	if r.sharded {
		return ps.SSubscribe(ctx, channels...)
	}
	return ps.Subscribe(ctx, channels...)
}

func (r *Relay) unsubscribe(ctx context.Context, ps *redis.PubSub, channels []string) error {
	if r.sharded {
		return ps.SUnsubscribe(ctx, channels...)
	}
	return ps.Unsubscribe(ctx, channels...)
}

// groupPath is the outage path of group id's connection.
func groupPath(id int) string { return "subscribe:" + strconv.Itoa(id) }
