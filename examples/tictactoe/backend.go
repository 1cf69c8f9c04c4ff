package tictactoe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/appstream"
)

// The app destinations the game reads, and the queue it answers on.
const (
	JoinDestination = "/app/tictactoe.join"
	MoveDestination = "/app/tictactoe.move"
	// PrivateQueue is the user queue name: clients subscribe to
	// /user/queue/tictactoe.
	PrivateQueue = "tictactoe"
)

// Publisher delivers a message to a destination's subscribers.
// APIClient is one.
type Publisher interface {
	Publish(ctx context.Context, dest string, body []byte) error
}

// Config configures a Backend.
type Config struct {
	// Redis holds the app stream. Required.
	Redis redis.UniversalClient
	// Publisher answers the players. Required.
	Publisher Publisher
	// Stream is wsserver's -app-stream. Default appstream.DefaultStream.
	Stream string
	// Group is the consumer group. Default "tictactoe".
	Group string
	// Consumer names this worker in the group. Default "worker".
	Consumer string
	// Block is how long one XREADGROUP waits for entries. Default 2 s.
	Block time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// MaxGames bounds the games held in memory. When it is reached,
	// finished games are forgotten to make room; when every game held is
	// still going, a join that would start another is refused. Default
	// DefaultMaxGames.
	MaxGames int
}

// DefaultMaxGames holds 10,000 games of a few hundred bytes each: any
// player can start a game by joining a new id, and the backend must not
// grow with every id a client makes up.
const DefaultMaxGames = 10_000

// MaxGameID is the longest game id accepted, in bytes; the id is part of
// the state's destination and of every message about the game.
const MaxGameID = 64

// Backend plays the games. Run it on one goroutine.
type Backend struct {
	cfg   Config
	games map[string]*Game
}

// New returns a Backend.
func New(cfg Config) (*Backend, error) {
	if cfg.Redis == nil || cfg.Publisher == nil {
		return nil, errors.New("tictactoe: Redis and Publisher are required")
	}
	if cfg.Stream == "" {
		cfg.Stream = appstream.DefaultStream
	}
	if cfg.Group == "" {
		cfg.Group = "tictactoe"
	}
	if cfg.Consumer == "" {
		cfg.Consumer = "worker"
	}
	if cfg.Block <= 0 {
		cfg.Block = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxGames <= 0 {
		cfg.MaxGames = DefaultMaxGames
	}
	return &Backend{cfg: cfg, games: map[string]*Game{}}, nil
}

// Run creates the consumer group if needed (reading only what arrives
// from then on), then handles this consumer's unacknowledged entries
// (those it read before a crash) and new ones until ctx ends.
func (b *Backend) Run(ctx context.Context) error {
	err := b.cfg.Redis.XGroupCreateMkStream(ctx, b.cfg.Stream, b.cfg.Group, "$").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("tictactoe: XGROUP CREATE: %w", err)
	}
	start := "0" // this consumer's pending entries first
	for ctx.Err() == nil {
		res, err := b.cfg.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: b.cfg.Group, Consumer: b.cfg.Consumer,
			Streams: []string{b.cfg.Stream, start}, Count: 100, Block: b.cfg.Block,
		}).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case ctx.Err() != nil:
			return nil
		case err != nil:
			b.cfg.Logger.Warn("XREADGROUP failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		n := 0
		for _, s := range res {
			for _, e := range s.Messages {
				n++
				b.handle(ctx, e)
				if err := b.cfg.Redis.XAck(ctx, b.cfg.Stream, b.cfg.Group, e.ID).Err(); err != nil && ctx.Err() == nil {
					b.cfg.Logger.Warn("XACK failed", "id", e.ID, "err", err)
				}
			}
		}
		if start == "0" && n == 0 {
			start = ">" // the backlog is done: new entries only
		}
	}
	return nil
}

// request is a join or move body.
type request struct {
	Game string `json:"game"`
	Cell int    `json:"cell"`
}

// private is a message to one player.
type private struct {
	Type  string `json:"type"` // joined or error
	Game  string `json:"game,omitempty"`
	Mark  string `json:"mark,omitempty"`
	Error string `json:"error,omitempty"`
}

// handle plays one entry. Answers that cannot be published are logged:
// the entry is acknowledged either way, a move is never played twice.
func (b *Backend) handle(ctx context.Context, e redis.XMessage) {
	m, err := appstream.Parse(e)
	if err != nil {
		b.cfg.Logger.Warn("unreadable entry", "err", err)
		return
	}
	var req request
	if err := json.Unmarshal(m.Body, &req); err != nil || req.Game == "" || len(req.Game) > MaxGameID {
		b.tell(ctx, m.Principal, private{Type: "error", Error: `want {"game": "<id of at most 64 bytes>", "cell": n}`})
		return
	}
	g := b.games[req.Game]
	switch m.Destination {
	case JoinDestination:
		if g == nil {
			if !b.makeRoom() {
				b.tell(ctx, m.Principal, private{Type: "error", Game: req.Game, Error: ErrTooManyGames.Error()})
				return
			}
			g = NewGame(req.Game)
			b.games[req.Game] = g
		}
		mark, err := g.Join(m.Principal)
		if err != nil {
			b.tell(ctx, m.Principal, private{Type: "error", Game: g.ID, Error: err.Error()})
			return
		}
		b.tell(ctx, m.Principal, private{Type: "joined", Game: g.ID, Mark: mark})
	case MoveDestination:
		if g == nil {
			b.tell(ctx, m.Principal, private{Type: "error", Game: req.Game, Error: "no such game"})
			return
		}
		if err := g.Move(m.Principal, req.Cell); err != nil {
			b.tell(ctx, m.Principal, private{Type: "error", Game: g.ID, Error: err.Error()})
			return
		}
	default:
		b.tell(ctx, m.Principal, private{Type: "error", Error: "unknown destination " + m.Destination})
		return
	}
	state, _ := json.Marshal(g)
	if err := b.cfg.Publisher.Publish(ctx, "/topic/game."+g.ID, state); err != nil {
		b.cfg.Logger.Warn("state not published", "game", g.ID, "err", err)
	}
}

// ErrTooManyGames refuses a new game while MaxGames games are going on.
var ErrTooManyGames = errors.New("tictactoe: too many games are going on; try again later")

// makeRoom reports whether another game fits, forgetting finished games
// first when MaxGames are held.
func (b *Backend) makeRoom() bool {
	if len(b.games) < b.cfg.MaxGames {
		return true
	}
	for id, g := range b.games {
		if g.Winner != "" {
			delete(b.games, id)
		}
	}
	return len(b.games) < b.cfg.MaxGames
}

// tell sends a private message to every session of principal p.
func (b *Backend) tell(ctx context.Context, p string, msg private) {
	body, _ := json.Marshal(msg)
	if err := b.cfg.Publisher.Publish(ctx, "/user/"+p+"/queue/"+PrivateQueue, body); err != nil {
		b.cfg.Logger.Warn("private message not published", "principal", p, "err", err)
	}
}
