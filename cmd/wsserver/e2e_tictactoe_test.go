package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/examples/tictactoe"
	"github.com/stompgate/stompgate/internal/testredis"
)

// player is one go-stomp client in a game: its private queue and the
// game's topic.
type player struct {
	conn    *stomp.Conn
	private *stomp.Subscription
	board   *stomp.Subscription
}

func (p *player) send(t *testing.T, dest, body string) {
	t.Helper()
	if err := p.conn.Send(dest, "application/json", []byte(body), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND %s %s: %v", dest, body, err)
	}
}

// privateMsg returns the next private message, decoded.
func (p *player) privateMsg(t *testing.T) map[string]string {
	t.Helper()
	m := nextMessage(t, p.private)
	if m.Destination != "/user/queue/"+tictactoe.PrivateQueue {
		t.Fatalf("private message on %s", m.Destination)
	}
	var v map[string]string
	if err := json.Unmarshal(m.Body, &v); err != nil {
		t.Fatalf("private message %q: %v", m.Body, err)
	}
	return v
}

// state returns the next game state published to the game's topic.
func (p *player) state(t *testing.T) tictactoe.Game {
	t.Helper()
	var g tictactoe.Game
	if err := json.Unmarshal(nextMessage(t, p.board).Body, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTicTacToe plays a game of the example backend: two go-stomp clients
// on a real wsserver and a real Redis; the backend reads the app stream
// with a consumer group and answers through the server API. The backend
// refuses a move out of turn in private, and the game ends with X's top
// row, which both players see.
func TestTicTacToe(t *testing.T) {
	rs := testredis.Start(t)
	base, _ := startApp(t, "-redis-url", rs.URL(), "-api-key", "game-key")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)

	backend, err := tictactoe.New(tictactoe.Config{
		Redis:     rdb,
		Publisher: &tictactoe.APIClient{URL: adminBase(t, base), Key: "game-key", HTTP: hc},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- backend.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("backend: %v", err)
		}
	})
	waitFor(t, clientTimeout, func() error {
		gs, err := rdb.XInfoGroups(context.Background(), "stompgate:app").Result()
		if err != nil || len(gs) != 1 {
			return fmt.Errorf("consumer groups %v, %v", gs, err)
		}
		return nil
	})

	var alice, bob player
	for _, p := range []*player{&alice, &bob} {
		p.conn = dialStomp(t, wsURL(base))
		p.private = subscribe(t, p.conn, "/user/queue/"+tictactoe.PrivateQueue)
		p.board = subscribe(t, p.conn, "/topic/game.g1")
	}

	alice.send(t, tictactoe.JoinDestination, `{"game":"g1"}`)
	if v := alice.privateMsg(t); v["type"] != "joined" || v["mark"] != "X" {
		t.Fatalf("alice joined: %v", v)
	}
	bob.send(t, tictactoe.JoinDestination, `{"game":"g1"}`)
	if v := bob.privateMsg(t); v["type"] != "joined" || v["mark"] != "O" {
		t.Fatalf("bob joined: %v", v)
	}
	for _, p := range []*player{&alice, &bob} {
		if g := p.state(t); g.O != "" {
			t.Fatalf("state after the first join: %+v", g)
		}
		if g := p.state(t); g.X != "anonymous-"+alice.conn.Session() || g.O != "anonymous-"+bob.conn.Session() || g.Turn != "X" {
			t.Fatalf("state after the second join: %+v", g)
		}
	}

	// Out of turn: only bob hears of it.
	bob.send(t, tictactoe.MoveDestination, `{"game":"g1","cell":4}`)
	if v := bob.privateMsg(t); v["type"] != "error" || v["error"] != tictactoe.ErrNotYourTurn.Error() {
		t.Fatalf("bob out of turn: %v", v)
	}
	moves := []struct {
		p    *player
		cell int
	}{{&alice, 0}, {&bob, 3}, {&alice, 1}, {&bob, 4}, {&alice, 2}}
	var last [2]tictactoe.Game
	for _, mv := range moves {
		mv.p.send(t, tictactoe.MoveDestination, fmt.Sprintf(`{"game":"g1","cell":%d}`, mv.cell))
		last[0], last[1] = alice.state(t), bob.state(t)
	}
	for i, g := range last {
		if g.Winner != "X" || g.Board != "XXXOO...." {
			t.Fatalf("player %d sees the final state %+v", i, g)
		}
	}
	// Alice got no private message: her queue's next one is this answer.
	alice.send(t, tictactoe.MoveDestination, `{"game":"g1","cell":8}`)
	if v := alice.privateMsg(t); v["error"] != tictactoe.ErrGameOver.Error() {
		t.Fatalf("alice after the end: %v", v)
	}
	pending, err := rdb.XPending(context.Background(), "stompgate:app", "tictactoe").Result()
	if err != nil {
		t.Fatal(err)
	}
	// The last entry may still be in hand; everything before it is
	// acknowledged.
	if pending.Count > 1 {
		t.Fatalf("%d entries pending, want the backend to have acknowledged them", pending.Count)
	}
}
