package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/examples/tictactoe"
	"github.com/stompgate/stompgate/internal/testredis"
)

// startTicTacToe runs the example game as its command does: a wired
// wsserver on a real Redis with the server API, the backend reading the
// app stream, and the page's handler in front of the wsserver. It
// returns the wsserver's base URL and the page's.
func startTicTacToe(t *testing.T) (base, page string) {
	t.Helper()
	rs := testredis.Start(t)
	base, _ = startApp(t, "-redis-url", rs.URL(), "-api-key", "game-key")
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
	h, err := tictactoe.PageHandler(tictactoe.PageConfig{WSServer: base})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewServer(h)
	t.Cleanup(ps.Close)
	return base, ps.URL
}

// dialAsPage opens a WebSocket to url as a browser on origin does: with
// its Origin header.
func dialAsPage(t *testing.T, url, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{"v12.stomp"},
		HTTPHeader:   http.Header{"Origin": {origin}},
	})
	if err == nil {
		t.Cleanup(func() { _ = ws.CloseNow() })
	}
	return ws, resp, err
}

// TestTicTacToePage plays the example game through its page's server:
// the page and its STOMP client are served from one origin, two players
// connect to the page's /ws with that origin (as two browser tabs do),
// the proxy passes them on to wsserver, which accepts them as same-origin
// (it refuses the same Origin on its own listener), and they play the
// frames game.js sends to a draw that both see.
func TestTicTacToePage(t *testing.T) {
	base, page := startTicTacToe(t)

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(page + tictactoe.StompJSPath)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(js), "StompJs") {
		t.Fatalf("GET %s from the page's origin: %s, %d bytes", tictactoe.StompJSPath, resp.Status, len(js))
	}

	if _, resp, err := dialAsPage(t, wsURL(base), page); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the page's Origin straight to wsserver: %v (%s), want 403 cross-origin", err, describe(resp))
	}

	var x, o player
	for _, p := range []*player{&x, &o} {
		ws, resp, err := dialAsPage(t, wsURL(page), page)
		if err != nil {
			t.Fatalf("dial through the page's origin: %v (%s)", err, describe(resp))
		}
		p.conn = connectStomp(t, ws)
		p.private = subscribe(t, p.conn, "/user/queue/"+tictactoe.PrivateQueue)
		p.board = subscribe(t, p.conn, "/topic/game.page")
	}
	x.send(t, tictactoe.JoinDestination, `{"game":"page"}`)
	if v := x.privateMsg(t); v["type"] != "joined" || v["mark"] != "X" {
		t.Fatalf("first tab joined: %v", v)
	}
	o.send(t, tictactoe.JoinDestination, `{"game":"page"}`)
	if v := o.privateMsg(t); v["type"] != "joined" || v["mark"] != "O" {
		t.Fatalf("second tab joined: %v", v)
	}
	for _, p := range []*player{&x, &o} {
		p.state(t) // after the first join
		if g := p.state(t); g.Turn != "X" || g.O == "" {
			t.Fatalf("after the second join: %+v", g)
		}
	}
	// X O X / X O O / O X X: no line, a full board.
	var last [2]tictactoe.Game
	for i, cell := range []int{0, 1, 2, 4, 3, 5, 7, 6, 8} {
		p := &x
		if i%2 == 1 {
			p = &o
		}
		p.send(t, tictactoe.MoveDestination, fmt.Sprintf(`{"game":"page","cell":%d}`, cell))
		last[0], last[1] = x.state(t), o.state(t)
		if last[0] != last[1] {
			t.Fatalf("after move %d the tabs see %+v and %+v", i, last[0], last[1])
		}
	}
	if g := last[0]; g.Winner != "draw" || g.Board != "XOXXOOOXX" || g.Turn != "" {
		t.Fatalf("final state %+v, want a draw on XOXXOOOXX", g)
	}
}
