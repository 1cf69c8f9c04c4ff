package handshake

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// gate is a redis.Hook that holds every pipeline of decisions until the
// test lets it go, so that a test decides what queues behind a pipeline in
// flight.
type gate struct {
	// held receives the number of commands of each pipeline as it is
	// held.
	held chan int
	// release lets one held pipeline go: nil runs it, an error fails
	// every command in it without sending anything.
	release chan error
	// open, once closed, lets every pipeline go.
	open chan struct{}
}

func newGate() *gate {
	return &gate{held: make(chan int, 16), release: make(chan error, 16), open: make(chan struct{})}
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "evalsha" {
			// Not a decision: the connection set-up, for one.
			return next(ctx, cmds)
		}
		// The pipeline's own deadline is not watched: a test decides
		// when a held pipeline goes, even after its deadline.
		select {
		case g.held <- len(cmds):
		case <-g.open:
		}
		select {
		case err := <-g.release:
			if err != nil {
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		case <-g.open:
		}
		return next(ctx, cmds)
	}
}

// waitHeld waits until the gate holds a pipeline.
func (g *gate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no pipeline reached Redis within 10s")
	}
}

// gatedStore returns a RedisStore on a fresh redis-server (or on client,
// when not nil) whose pipelines pass through a gate, with the script
// already loaded so that no NOSCRIPT retry takes a pipeline of its own.
func gatedStore(t *testing.T, client redis.UniversalClient, cfg RedisConfig) (*RedisStore, *gate) {
	t.Helper()
	if client == nil {
		client = newTestClient(t, testredis.Start(t).URL())
	}
	if err := limitScript.Load(t.Context(), client).Err(); err != nil {
		t.Fatal(err)
	}
	g := newGate()
	client.AddHook(g)
	cfg.Client = client
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxQueueWait == 0 {
		// A held pipeline holds the queue behind it as long as a test
		// wants.
		cfg.MaxQueueWait = 10 * time.Second
	}
	if cfg.MaxPipelines == 0 {
		cfg.MaxPipelines = 1
	}
	s, err := NewRedisStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let anything still held go, so Close does not wait for it.
		close(g.open)
		_ = s.Close()
	})
	return s, g
}

// waitQueued waits until n decisions wait in s's queue.
func waitQueued(t *testing.T, s *RedisStore, n int) {
	t.Helper()
	err := poll.Wait(10*time.Second, func() error {
		s.pipe.mu.Lock()
		got := len(s.pipe.queue)
		s.pipe.mu.Unlock()
		if got != n {
			return fmt.Errorf("%d decisions queued, want %d", got, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// answer is one caller's answer.
type answer struct {
	r   Result
	err error
}

// allowAsync runs s.Allow(ctx, key, l) on its own goroutine; the answer
// arrives on the returned channel.
func allowAsync(ctx context.Context, s Store, key string, l Limit) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := s.Allow(ctx, key, l)
		ch <- answer{r, err}
	}()
	return ch
}

// Decisions that arrive while a pipeline is in flight go out together in
// the next one, and each caller gets the answer for its own key.
func TestRedisStorePipelineCoalesces(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{})
	ctx := t.Context()
	const n = 40
	key := func(i int) string { return "198.51.100." + strconv.Itoa(i) }
	for i := 0; i < n; i += 3 {
		if err := s.Ban(ctx, key(i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	answers := make([]<-chan answer, n)
	answers[0] = allowAsync(ctx, s, key(0), handshakeLimit)
	g.waitHeld(t)
	for i := 1; i < n; i++ {
		answers[i] = allowAsync(ctx, s, key(i), handshakeLimit)
	}
	waitQueued(t, s, n-1)
	g.release <- nil
	g.waitHeld(t)
	g.release <- nil
	for i, ch := range answers {
		o := <-ch
		wantBanned := i%3 == 0
		if o.err != nil || o.r.Banned != wantBanned || o.r.Allowed == wantBanned || o.r.Store != StoreRedis {
			t.Errorf("Allow(%s) = %+v, %v; want banned %v, allowed %v, by redis", key(i), o.r, o.err, wantBanned, !wantBanned)
		}
	}
	if got, want := s.PipelineStats(), (PipelineStats{Batches: 2, Decisions: n}); got != want {
		t.Errorf("PipelineStats = %+v, want %+v", got, want)
	}
}

// A queue longer than MaxBatch goes out in batches of MaxBatch, oldest
// first.
func TestRedisStorePipelineMaxBatch(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{MaxBatch: 3})
	ctx := t.Context()
	answers := []<-chan answer{allowAsync(ctx, s, "a", handshakeLimit)}
	g.waitHeld(t)
	for i := range 7 {
		answers = append(answers, allowAsync(ctx, s, "k"+strconv.Itoa(i), handshakeLimit))
	}
	waitQueued(t, s, 7)
	// The counters grow as a batch is sent, before the gate holds it.
	for _, want := range []uint64{1 + 3, 1 + 3 + 3, 1 + 3 + 3 + 1} {
		g.release <- nil
		g.waitHeld(t)
		if got := s.PipelineStats().Decisions; got != want {
			t.Fatalf("decisions sent = %d, want %d", got, want)
		}
	}
	g.release <- nil
	for _, ch := range answers {
		if o := <-ch; o.err != nil || !o.r.Allowed {
			t.Errorf("decision = %+v, %v; want allowed", o.r, o.err)
		}
	}
	if got, want := s.PipelineStats(), (PipelineStats{Batches: 4, Decisions: 8}); got != want {
		t.Errorf("PipelineStats = %+v, want %+v (1 + 3 + 3 + 1)", got, want)
	}
}

// Many decisions for one key in one script are made one after the other:
// at one instant exactly burst+1 pass, with excess 0, 1000, ... as if they
// had been sent alone.
func TestRedisStorePipelineSameKeyInOneBatch(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{})
	s.nowMs = func() int64 { return t0.UnixMilli() }
	ctx := t.Context()
	first := allowAsync(ctx, s, "192.0.2.99", handshakeLimit)
	g.waitHeld(t)
	const n = 12
	answers := make([]<-chan answer, n)
	for i := range answers {
		answers[i] = allowAsync(ctx, s, "192.0.2.1", handshakeLimit)
	}
	waitQueued(t, s, n)
	g.release <- nil
	g.waitHeld(t)
	g.release <- nil
	if o := <-first; o.err != nil || !o.r.Allowed {
		t.Fatalf("first decision = %+v, %v; want allowed", o.r, o.err)
	}
	excess := map[int64]bool{}
	refused := 0
	for _, ch := range answers {
		o := <-ch
		switch {
		case o.err != nil:
			t.Fatal(o.err)
		case o.r.Allowed:
			excess[o.r.Excess] = true
		case o.r.Excess != int64(handshakeLimit.Burst)*1000 || o.r.RetryAfter <= 0:
			t.Errorf("refused decision = %+v, want excess %d and a RetryAfter", o.r, handshakeLimit.Burst*1000)
		default:
			refused++
		}
	}
	for i := range handshakeLimit.Burst + 1 {
		if !excess[int64(i)*1000] {
			t.Errorf("no allowed decision with excess %d; got %v", i*1000, excess)
		}
	}
	if want := n - handshakeLimit.Burst - 1; refused != want || len(excess) != handshakeLimit.Burst+1 {
		t.Errorf("%d allowed, %d refused; want %d allowed, %d refused", len(excess), refused, handshakeLimit.Burst+1, want)
	}
}

// A full queue refuses at once with ErrQueueFull; it is this server's
// backlog, not Redis failing: the Limiter decides in memory, fail closed
// or not, without fallback mode, and the queued decisions are still
// answered.
func TestRedisStorePipelineQueueFull(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{MaxQueue: 3})
	ctx := t.Context()
	answers := []<-chan answer{allowAsync(ctx, s, "a", handshakeLimit)}
	g.waitHeld(t)
	for _, k := range []string{"b", "c", "d"} {
		answers = append(answers, allowAsync(ctx, s, k, handshakeLimit))
	}
	waitQueued(t, s, 3)

	_, err := s.Allow(ctx, "e", handshakeLimit)
	if !errors.Is(err, ErrQueueFull) || !strings.HasPrefix(err.Error(), "handshake: redis decision: ") {
		t.Errorf("Allow with a full queue error = %v, want a wrapped ErrQueueFull", err)
	}
	for _, failClosed := range []bool{false, true} {
		l, err := New(Config{Redis: s, FailClosed: failClosed, ProbeInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Allow(ctx, "f", handshakeLimit)
		if err != nil || r.Store != StoreMemory || !r.Allowed || r.Local != LocalQueueFull || l.InFallback() {
			t.Errorf("Limiter (FailClosed %v) with a full queue = %+v, %v, fallback %v; want allowed by memory as queue_full, no fallback", failClosed, r, err, l.InFallback())
		}
		_ = l.Close()
	}
	if got := s.PipelineStats().QueueFull; got != 3 {
		t.Errorf("PipelineStats.QueueFull = %d, want 3", got)
	}

	g.release <- nil
	g.waitHeld(t)
	g.release <- nil
	for _, ch := range answers {
		if o := <-ch; o.err != nil || !o.r.Allowed {
			t.Errorf("queued decision = %+v, %v; want allowed", o.r, o.err)
		}
	}
}

// A caller whose context ends, or whose Timeout passes, stops waiting
// while the pipeline before it is still in flight; the decisions it left
// are not sent.
func TestRedisStorePipelineCallerTimeout(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{Timeout: 300 * time.Millisecond})
	first := allowAsync(context.Background(), s, "a", handshakeLimit)
	g.waitHeld(t)

	ctx, cancel := context.WithCancel(context.Background())
	canceled := allowAsync(ctx, s, "b", handshakeLimit)
	timedOut := allowAsync(context.Background(), s, "c", handshakeLimit)
	waitQueued(t, s, 2)
	cancel()
	if o := <-canceled; !errors.Is(o.err, context.Canceled) {
		t.Errorf("Allow with a canceled context = %+v, %v; want context.Canceled", o.r, o.err)
	}
	if o := <-timedOut; !errors.Is(o.err, context.DeadlineExceeded) {
		t.Errorf("Allow past Timeout = %+v, %v; want context.DeadlineExceeded", o.r, o.err)
	}
	if o := <-first; !errors.Is(o.err, context.DeadlineExceeded) {
		t.Errorf("held decision = %+v, %v; want context.DeadlineExceeded once its Timeout passed", o.r, o.err)
	}
	g.release <- nil
	err := poll.Wait(10*time.Second, func() error {
		s.pipe.mu.Lock()
		defer s.pipe.mu.Unlock()
		if s.pipe.running != 0 {
			return errors.New("the sender still runs")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-g.held:
		t.Errorf("a pipeline of %d commands was sent for callers that had gone", n)
	default:
	}
	if got := s.PipelineStats(); got.Batches != 1 || got.Decisions != 1 {
		t.Errorf("PipelineStats = %+v, want one batch of one decision", got)
	}
}

// A failed pipeline fails the decisions it carried and no others.
func TestRedisStorePipelineErrorFailsOnlyItsBatch(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{})
	ctx := t.Context()
	first := allowAsync(ctx, s, "a", handshakeLimit)
	g.waitHeld(t)
	second := []<-chan answer{allowAsync(ctx, s, "b", handshakeLimit), allowAsync(ctx, s, "c", handshakeLimit)}
	waitQueued(t, s, 2)
	injected := errors.New("injected failure")
	g.release <- injected
	if o := <-first; !errors.Is(o.err, injected) || !strings.HasPrefix(o.err.Error(), "handshake: redis decision: ") {
		t.Errorf("decision of the failed pipeline = %+v, %v; want the wrapped failure", o.r, o.err)
	}
	g.waitHeld(t)
	g.release <- nil
	for _, ch := range second {
		if o := <-ch; o.err != nil || !o.r.Allowed {
			t.Errorf("decision of the next pipeline = %+v, %v; want allowed", o.r, o.err)
		}
	}
}

// Close answers what is queued, leaves no goroutine, and the store still
// decides afterwards, one round trip per decision.
func TestRedisStorePipelineClose(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{})
	ctx := t.Context()
	first := allowAsync(ctx, s, "a", handshakeLimit)
	g.waitHeld(t)
	queued := allowAsync(ctx, s, "b", handshakeLimit)
	waitQueued(t, s, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a decision was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	g.release <- nil
	g.waitHeld(t)
	g.release <- nil
	if err := <-closed; err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	for _, ch := range []<-chan answer{first, queued} {
		if o := <-ch; o.err != nil || !o.r.Allowed {
			t.Errorf("decision queued before Close = %+v, %v; want allowed", o.r, o.err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if r, err := s.Allow(ctx, "c", handshakeLimit); err != nil || !r.Allowed {
		t.Errorf("Allow after Close = %+v, %v; want allowed", r, err)
	}
	if got := s.PipelineStats(); got.Batches != 2 {
		t.Errorf("PipelineStats after Close = %+v, want the 2 batches from before", got)
	}
}

// A flushed script cache in the middle of coalesced traffic: the batch
// that meets NOSCRIPT loads the script once and is answered.
func TestRedisStorePipelineNoScript(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{})
	ctx := t.Context()
	first := allowAsync(ctx, s, "a", handshakeLimit)
	g.waitHeld(t)
	answers := []<-chan answer{allowAsync(ctx, s, "b", handshakeLimit), allowAsync(ctx, s, "c", handshakeLimit)}
	waitQueued(t, s, 2)
	if err := s.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	g.release <- nil // the first pipeline meets NOSCRIPT
	g.waitHeld(t)
	g.release <- nil // its retry
	g.waitHeld(t)
	g.release <- nil // the second batch
	for _, ch := range append(answers, first) {
		if o := <-ch; o.err != nil || !o.r.Allowed {
			t.Errorf("decision = %+v, %v; want allowed", o.r, o.err)
		}
	}
	if got := s.PipelineStats(); got.Batches != 2 || got.Decisions != 3 {
		t.Errorf("PipelineStats = %+v, want 2 batches, 3 decisions", got)
	}
}

// On Redis Cluster every decision is its own EVALSHA, and go-redis sends
// one pipeline per node that owns their slots: keys spread over the
// cluster's masters are all decided in one batch, and each bucket is
// written where its slot lives.
func TestRedisStorePipelineCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	client := newTestClient(t, cl.URL())
	s, g := gatedStore(t, client, RedisConfig{})
	ctx := t.Context()
	const n = 60
	key := func(i int) string { return "2001:db8::" + strconv.Itoa(i) }
	for i := 0; i < n; i += 4 {
		if err := s.Ban(ctx, key(i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	first := allowAsync(ctx, s, "203.0.113.1", handshakeLimit)
	g.waitHeld(t)
	answers := make([]<-chan answer, n)
	for i := range answers {
		answers[i] = allowAsync(ctx, s, key(i), handshakeLimit)
	}
	waitQueued(t, s, n)
	g.release <- nil
	if cmds := <-g.held; cmds != n {
		t.Errorf("the batch's pipeline has %d commands, want %d (one EVALSHA per decision)", cmds, n)
	}
	g.release <- nil
	if o := <-first; o.err != nil {
		t.Fatal(o.err)
	}
	for i, ch := range answers {
		o := <-ch
		wantBanned := i%4 == 0
		if o.err != nil || o.r.Banned != wantBanned || o.r.Allowed == wantBanned {
			t.Errorf("Allow(%s) = %+v, %v; want banned %v", key(i), o.r, o.err, wantBanned)
		}
	}
	nodes := map[string]bool{}
	for i := 1; i < n; i++ {
		if i%4 == 0 {
			continue
		}
		bk := s.bucketKey(key(i), handshakeLimit.Name)
		if c, err := client.Exists(ctx, bk).Result(); err != nil || c != 1 {
			t.Errorf("EXISTS %s = %d, %v; want 1", bk, c, err)
		}
		slot, err := client.ClusterKeySlot(ctx, bk).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[cl.SlotOwner(int(slot)).Addr] = true
	}
	if len(nodes) < 2 {
		t.Errorf("the keys live on %d node(s), want several: the test proves nothing", len(nodes))
	}
}

func TestNewRedisStorePipelineConfig(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer client.Close()
	tests := []struct {
		name    string
		cfg     RedisConfig
		wantErr string
		want    *pipeline // nil: coalescing off
	}{
		{name: "defaults", cfg: RedisConfig{}, want: &pipeline{maxBatch: DefaultMaxBatch, maxQueue: DefaultMaxQueue, maxInFlight: DefaultMaxPipelines}},
		{name: "set", cfg: RedisConfig{MaxBatch: 7, MaxQueue: 9, MaxPipelines: 3}, want: &pipeline{maxBatch: 7, maxQueue: 9, maxInFlight: 3}},
		{name: "off", cfg: RedisConfig{MaxBatch: -1}},
		{name: "negative queue", cfg: RedisConfig{MaxQueue: -1}, wantErr: "handshake: RedisConfig.MaxQueue -1 is negative"},
		{name: "negative pipelines", cfg: RedisConfig{MaxPipelines: -2}, wantErr: "handshake: RedisConfig.MaxPipelines -2 is negative"},
		{name: "negative queue wait", cfg: RedisConfig{MaxQueueWait: -time.Second}, wantErr: "handshake: RedisConfig.MaxQueueWait -1s is negative"},
		{name: "negative timeouts to fail", cfg: RedisConfig{TimeoutsToFail: -1}, wantErr: "handshake: RedisConfig.TimeoutsToFail -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Client = client
			s, err := NewRedisStore(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("NewRedisStore error = %v, want %q wrapping ErrInvalidConfig", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			switch {
			case tt.want == nil && s.pipe != nil:
				t.Errorf("coalescing on, want off")
			case tt.want == nil:
			case s.pipe == nil:
				t.Errorf("coalescing off, want on")
			case s.pipe.maxBatch != tt.want.maxBatch || s.pipe.maxQueue != tt.want.maxQueue || s.pipe.maxInFlight != tt.want.maxInFlight:
				t.Errorf("batch %d queue %d pipelines %d, want %d %d %d", s.pipe.maxBatch, s.pipe.maxQueue, s.pipe.maxInFlight,
					tt.want.maxBatch, tt.want.maxQueue, tt.want.maxInFlight)
			}
		})
	}
}

// With coalescing off every decision is its own round trip, as before.
func TestRedisStoreUnpipelined(t *testing.T) {
	client := newTestClient(t, testredis.Start(t).URL())
	s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second, MaxBatch: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if r, err := s.Allow(t.Context(), "k"+strconv.Itoa(i), handshakeLimit); err != nil || !r.Allowed {
				t.Errorf("Allow = %+v, %v; want allowed", r, err)
			}
		})
	}
	wg.Wait()
	if got := s.PipelineStats(); got != (PipelineStats{}) {
		t.Errorf("PipelineStats = %+v, want zero", got)
	}
}

// The keys a call sends are the store's bucketKey and banKey.
func TestPipelineCallKeys(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer client.Close()
	s, err := NewRedisStore(RedisConfig{Client: client, Prefix: "app:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, key := range []string{"192.0.2.1", "2001:db8::1", "principal:alice"} {
		c := &call{}
		s.pipe.fill(t.Context(), c, key, handshakeLimit)
		if want := s.bucketKey(key, handshakeLimit.Name); c.bucket != want {
			t.Errorf("bucket key = %q, want %q", c.bucket, want)
		}
		if want := s.banKey(key); c.ban != want {
			t.Errorf("ban key = %q, want %q", c.ban, want)
		}
	}
}
