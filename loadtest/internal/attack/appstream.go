package attack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
	"github.com/stompgate/stompgate/stompframe"
)

// app-stream-fill: sessions at the send limit append large SENDs to an
// app destination while no backend reads the app stream; each session the
// server ends is replaced by a new one from a fresh address (a new
// anonymous principal). Beside it an honest client sends one small app
// SEND with a receipt per second. The figures: the Redis' used_memory
// before, at its peak and after (with -redis-url), how the honest app
// SENDs were answered, and the server's refusals by bound (from
// -metrics-url).

// Figures of app-stream-fill.
const (
	figRedisBefore     = "redis_used_memory_before"
	figRedisPeak       = "redis_used_memory_peak"
	figRedisAfter      = "redis_used_memory_after"
	figAppSessions     = "sessions_opened"
	figHonestAppSent   = "honest_app_sent"
	figHonestAppTaken  = "honest_app_receipted"
	figHonestAppBusy   = "honest_app_busy"
	figHonestAppFailed = "honest_app_unanswered"
)

// App-stream-fill defaults and bounds, each with its reason.
const (
	// defaultAppSessions and defaultAppBody are the attack as first
	// measured: 20 anonymous sessions, 60 KB bodies.
	defaultAppSessions = 20
	defaultAppBody     = 60_000
	// defaultAppTotalBytes is wsserver's default -app-stream-total-bytes,
	// what the Redis growth is judged against.
	defaultAppTotalBytes = 64 << 20
	// appHonestInterval paces the honest app sender: a real user's peak
	// is 1.3 SEND/s.
	appHonestInterval = time.Second
	// appReceiptTimeout bounds the wait for an honest RECEIPT: wsserver's
	// -app-timeout is 2 s; what takes longer is unanswered.
	appReceiptTimeout = 5 * time.Second
	// redisSampleInterval is how often used_memory is read for its peak.
	redisSampleInterval = 250 * time.Millisecond
	// appRedisGrowthFactor is how far the Redis may grow past the total
	// bound: Redis spends some memory per entry beyond what is charged.
	appRedisGrowthFactor = 1.5
)

type appFillAttack struct {
	env    *attackEnv
	atk    *attackers
	rdb    *redis.Client // nil without -redis-url
	before int64
}

func (a *appFillAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	if u := a.env.cfg.redisURL; u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return fmt.Errorf("-redis-url: %w", err)
		}
		a.rdb = redis.NewClient(opt)
		if a.before, err = usedMemory(ctx, a.rdb); err != nil {
			_ = a.rdb.Close()
			a.rdb = nil
			return fmt.Errorf("-redis-url: %w", err)
		}
	}
	return nil
}

// usedMemory reads Redis' used_memory.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, scrape.Timeout)
	defer cancel()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}

func (a *appFillAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	body := attackBody(cfg.appBody)
	frame := appendSend(nil, "/app/abuse.fill", "", body)
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range cfg.appSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; time.Now().Before(end) && ctx.Err() == nil && opened.Load() < maxAttackSessions; k++ {
				// A pause before each new session keeps a server that
				// ends them at once from turning this into a dial loop.
				if k > 0 && !sleepUntil(ctx, time.Now().Add(retryPause)) {
					return
				}
				s, err := a.atk.open(ctx, a.env.nextSource(), "0,0", true)
				if err != nil {
					a.atk.note("open: " + err.Error())
					return
				}
				opened.Add(1)
				from := start
				if now := time.Now(); now.After(from) {
					from = now
				}
				paceUntil(ctx, from, end, float64(cfg.sendLimit), func(n int64) error {
					for range n {
						if s.sink.Gone.Load() {
							return errors.New("closed by the server")
						}
						if err := a.atk.write(s, websocket.MessageText, frame, 1); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}()
	}
	var honest honestApp
	wg.Add(1)
	go func() {
		defer wg.Done()
		honest.run(ctx, a.env, start, end)
	}()
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	if a.rdb != nil {
		peak.Store(a.before)
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			t := time.NewTicker(redisSampleInterval)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if m, err := usedMemory(ctx, a.rdb); err == nil && m > peak.Load() {
						peak.Store(m)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	sampler.Wait()

	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Figures = map[string]float64{
		figAppSessions:     float64(opened.Load()),
		figHonestAppSent:   float64(honest.sent),
		figHonestAppTaken:  float64(honest.receipted),
		figHonestAppBusy:   float64(honest.busy),
		figHonestAppFailed: float64(honest.unanswered),
	}
	rep.Summary = fmt.Sprintf("%d sessions (one principal each) wrote %d app SENDs of %d bytes at %d SEND/s each, no backend reading; honest app SENDs: %d sent, %d RECEIPTed, %d refused \"backend busy\", %d unanswered or failed otherwise",
		opened.Load(), rep.FramesWritten, len(body), cfg.sendLimit, honest.sent, honest.receipted, honest.busy, honest.unanswered)
	if a.rdb != nil {
		after, err := usedMemory(context.WithoutCancel(ctx), a.rdb)
		if err != nil {
			a.atk.note("redis: " + err.Error())
		}
		_ = a.rdb.Close()
		rep.Figures[figRedisBefore], rep.Figures[figRedisPeak], rep.Figures[figRedisAfter] = float64(a.before), float64(peak.Load()), float64(after)
		rep.Summary += fmt.Sprintf("; Redis used_memory %.1f MiB before, %.1f MiB peak, %.1f MiB after", scenario.MiB(a.before), scenario.MiB(peak.Load()), scenario.MiB(after))
	}
	if u := cfg.MetricsEndpoint(); u != "" {
		if s, err := scrape.Fetch(context.WithoutCancel(ctx), u); err == nil && s.Has("stompgate_app_backlog_refusals_total") {
			var parts []string
			for _, b := range []string{"principal", "address", "total", "entries"} {
				n := s.Sum("stompgate_app_backlog_refusals_total", `bound="`+b+`"`)
				rep.Figures["refused_"+b] = n
				parts = append(parts, fmt.Sprintf("%s %.0f", b, n))
			}
			rep.Summary += "; server refusals since start by bound: " + strings.Join(parts, ", ")
		}
	}
	rep.Notes = append(rep.Notes, honest.notes...)
	return rep
}

// honestApp is an honest client's app SENDs during the attack.
type honestApp struct {
	sent, receipted, busy, unanswered int64
	notes                             []string
}

// run sends one small app SEND with a receipt every appHonestInterval
// from its own address, opening a new session when the server ended the
// last one.
func (h *honestApp) run(ctx context.Context, env *attackEnv, start, end time.Time) {
	if !sleepUntil(ctx, start) {
		return
	}
	local := env.nextSource()
	var c *client.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
		next := time.Now().Add(appHonestInterval)
		if c == nil {
			var err error
			if c, err = env.d.Dial(ctx, client.HTTPClientFrom(local), "0,0"); err != nil {
				h.note("honest dial: " + err.Error())
				h.unanswered++
				c = nil
				sleepUntil(ctx, next)
				continue
			}
		}
		id := "honest-" + strconv.Itoa(i)
		f := append([]byte("SEND\n"), "destination:/app/abuse.honest\nreceipt:"+id+"\n"...)
		f = stompframe.AppendContentLength(f, 2)
		f = append(f, "\nhi\x00"...)
		h.sent++
		rctx, cancel := context.WithTimeout(ctx, appReceiptTimeout)
		err := c.Write(rctx, f)
		if err == nil {
			_, err = c.Await(rctx, stompframe.CommandReceipt, id)
		}
		cancel()
		var ef *client.ErrorFrame
		switch {
		case err == nil:
			h.receipted++
		case errors.As(err, &ef) && ef.Message == "backend busy":
			h.busy++
		default:
			h.unanswered++
			h.note("honest app SEND: " + err.Error())
		}
		if err != nil {
			c.Close()
			c = nil
		}
		sleepUntil(ctx, next)
	}
}

func (h *honestApp) note(s string) {
	if len(h.notes) < maxNotes {
		h.notes = append(h.notes, s)
	}
}

// judgeAppFill holds app-stream-fill to its targets: the Redis grows by
// no more than about the app stream's total bound, and every honest app
// SEND is answered (a RECEIPT, or ERROR "backend busy" once the backlog
// is full), none left waiting or failed for want of Redis.
func (r *abuseReport) judgeAppFill(cfg *abuseConfig, add func(target, status, detail string)) {
	target := fmt.Sprintf("app-stream-fill grows Redis by under %.1f × the app stream's total bound and answers every honest app SEND", appRedisGrowthFactor)
	a := r.find(attackAppFill)
	if a == nil {
		add(target, "n/a", "not run")
		return
	}
	f := a.Attacker.Figures
	detail := fmt.Sprintf("honest app SENDs: %.0f RECEIPTed, %.0f busy, %.0f unanswered of %.0f",
		f[figHonestAppTaken], f[figHonestAppBusy], f[figHonestAppFailed], f[figHonestAppSent])
	status := "pass"
	if f[figHonestAppFailed] > 0 {
		status = "fail"
	}
	if _, ok := f[figRedisPeak]; !ok {
		add(target, "n/a", detail+"; Redis not measured: give -redis-url")
		return
	}
	growth, bound := f[figRedisPeak]-f[figRedisBefore], appRedisGrowthFactor*float64(cfg.appTotalBytes)
	if growth > bound {
		status = "fail"
	}
	add(target, status, fmt.Sprintf("%s; Redis used_memory +%.1f MiB at its peak (bound %.1f MiB)", detail, growth/(1<<20), bound/(1<<20)))
}
