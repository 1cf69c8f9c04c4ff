package attack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/loadtest/internal/scrape"
	"github.com/stompgate/stompgate/relay"
)

// relayInjectAttack publishes straight into Redis, as anything with write
// access to the server's Redis can: on the honest room's relay channel,
// large payloads (-inject-size, 5 MB as first seen) and small forged
// messages in the relay's format, unsigned, signed with a key no instance
// has, and in the format of servers before the envelope. A server without bounds delivers the large ones whole and
// the small ones as if another instance had relayed them; one with
// -relay-max-payload drops the large ones unread, and one with -relay-key
// drops the forged ones. The honest subscribers count what reaches them
// (foreign messages).
type relayInjectAttack struct {
	env *attackEnv
	rdb *redis.Client
	// before is the server's relay drop counters as the attack starts.
	before scrape.Samples
}

// The relay drop reasons the attack reports, as the server counts them.
var relayInjectReasons = []string{relay.DropTooLarge, relay.DropUnsigned, relay.DropBadSignature, relay.DropMalformed}

func (a *relayInjectAttack) prepare(ctx context.Context) error {
	if a.env.cfg.redisURL == "" {
		return errors.New("needs -redis-url: the Redis of a server started with -relay redis")
	}
	opt, err := redis.ParseURL(a.env.cfg.redisURL)
	if err != nil {
		return fmt.Errorf("-redis-url: %w", err)
	}
	a.rdb = redis.NewClient(opt)
	if err := a.rdb.Ping(ctx).Err(); err != nil {
		_ = a.rdb.Close()
		return fmt.Errorf("-redis-url: %w", err)
	}
	if url := a.env.cfg.MetricsEndpoint(); url != "" {
		a.before, _ = scrape.Fetch(ctx, url)
	}
	return nil
}

// forgedRelayPayload is a payload in the relay's wire format (version 2)
// for dest with body, from an instance that does not exist, sealed by s
// (nil: unsigned).
func forgedRelayPayload(s *relay.Signer, dest string, body []byte) []byte {
	var p []byte
	for _, f := range []string{"abuse-relay", dest} {
		p = binary.AppendUvarint(p, uint64(len(f)))
		p = append(p, f...)
	}
	p = append(p, 0) // no headers
	p = append(p, body...)
	return s.Seal([]byte{2}, p, time.Now())
}

// forgedRelayPayloadV1 is the same in the wire format of servers before
// the envelope (version 1: no envelope, and a message-id the publisher
// chose), so that the attack shows what older servers deliver.
func forgedRelayPayloadV1(dest string, body []byte) []byte {
	p := []byte{1}
	for _, f := range []string{"abuse-relay", "chosen-by-the-injector", dest} {
		p = binary.AppendUvarint(p, uint64(len(f)))
		p = append(p, f...)
	}
	p = append(p, 0) // no headers
	return append(p, body...)
}

func (a *relayInjectAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	defer a.rdb.Close()
	if !sleepUntil(ctx, start) {
		return rep
	}
	channel := relay.DefaultPrefix + "{" + a.env.room + "}"
	foreignKey, err := relay.NewSigner(strings.Repeat("k", relay.MinKeyLen), 0)
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
		return rep
	}
	filler := make([]byte, cfg.injectSize)
	bigs := [][]byte{forgedRelayPayload(nil, a.env.room, filler), forgedRelayPayloadV1(a.env.room, filler)}
	forged := []byte("forged through Redis")
	var bigSent, smallSent, delivered int64
	interval := time.Duration(float64(time.Second) / cfg.injectRate)
	next := start
	for i := 0; ; i++ {
		if !sleepUntil(ctx, next) || !time.Now().Before(end) {
			break
		}
		next = next.Add(interval)
		// Every tenth payload is a large one, in either wire version;
		// the others rotate: unsigned, signed with a foreign key, and in
		// the older version.
		var p []byte
		large := i%10 == 0
		switch {
		case large:
			p = bigs[(i/10)%2]
		case i%3 == 0:
			p = forgedRelayPayload(nil, a.env.room, forged)
		case i%3 == 1:
			p = forgedRelayPayload(foreignKey, a.env.room, forged)
		default:
			p = forgedRelayPayloadV1(a.env.room, forged)
		}
		n, err := a.rdb.Publish(ctx, channel, p).Result()
		if err != nil {
			if len(rep.Notes) < 3 {
				rep.Notes = append(rep.Notes, "PUBLISH: "+err.Error())
			}
			continue
		}
		delivered += n
		if large {
			bigSent++
		} else {
			smallSent++
		}
		rep.FramesWritten++
	}
	rep.Figures = map[string]float64{figInjectedLarge: float64(bigSent), figInjectedForged: float64(smallSent)}
	dropped := "server drops not measured (no -metrics-url)"
	if url := cfg.MetricsEndpoint(); url != "" && a.before != nil {
		if after, err := scrape.Fetch(ctx, url); err == nil {
			var parts []string
			for _, r := range relayInjectReasons {
				d := after.Sum("stompgate_relay_dropped_total", `reason="`+r+`"`) - a.before.Sum("stompgate_relay_dropped_total", `reason="`+r+`"`)
				rep.Figures["dropped_"+r] = d
				parts = append(parts, fmt.Sprintf("%s %.0f", r, d))
			}
			dropped = "server dropped " + strings.Join(parts, ", ")
		}
	}
	rep.Summary = fmt.Sprintf("PUBLISHed %d payloads of %d bytes and %d forged messages (a third each unsigned, under a foreign key, in the older wire format) on %s (%d receptions by server subscriptions); %s",
		bigSent, cfg.injectSize, smallSent, channel, delivered, dropped)
	return rep
}

// The relay-inject figures.
const (
	figInjectedLarge  = "injected_large"
	figInjectedForged = "injected_forged"
)
