package tictactoe

import (
	"errors"
	"testing"
)

func TestGame(t *testing.T) {
	g := NewGame("g")
	if _, err := g.Join("a"); err != nil {
		t.Fatal(err)
	}
	if err := g.Move("a", 0); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("move before the second player: %v", err)
	}
	if m, err := g.Join("b"); m != "O" || err != nil {
		t.Fatalf("second join: %q %v", m, err)
	}
	if _, err := g.Join("c"); !errors.Is(err, ErrGameFull) {
		t.Fatalf("third join: %v", err)
	}
	for i, step := range []struct {
		p    string
		cell int
		want error
	}{
		{"b", 0, ErrNotYourTurn},
		{"c", 0, ErrNotAPlayer},
		{"a", 9, ErrBadCell},
		{"a", 0, nil},
		{"b", 0, ErrCellTaken},
		{"b", 3, nil},
		{"a", 1, nil},
		{"b", 4, nil},
		{"a", 2, nil}, // X wins the top row
		{"b", 5, ErrGameOver},
	} {
		if err := g.Move(step.p, step.cell); !errors.Is(err, step.want) {
			t.Fatalf("step %d: %s plays %d: %v, want %v", i, step.p, step.cell, err, step.want)
		}
	}
	if g.Winner != "X" || g.Board != "XXXOO...." || g.Turn != "" {
		t.Fatalf("game %+v", g)
	}
}

func TestDraw(t *testing.T) {
	g := NewGame("g")
	_, _ = g.Join("a")
	_, _ = g.Join("b")
	// X O X / X O O / O X X
	for _, c := range []struct {
		p    string
		cell int
	}{{"a", 0}, {"b", 1}, {"a", 2}, {"b", 4}, {"a", 3}, {"b", 5}, {"a", 7}, {"b", 6}, {"a", 8}} {
		if err := g.Move(c.p, c.cell); err != nil {
			t.Fatal(err)
		}
	}
	if g.Winner != "draw" {
		t.Fatalf("winner %q on %s", g.Winner, g.Board)
	}
}

// TestMakeRoom checks the bound on games held: finished games go first,
// and a backend full of games still going refuses another.
func TestMakeRoom(t *testing.T) {
	b := &Backend{cfg: Config{MaxGames: 3}, games: map[string]*Game{}}
	for _, id := range []string{"a", "b", "c"} {
		if !b.makeRoom() {
			t.Fatalf("no room for game %s of 3", id)
		}
		b.games[id] = NewGame(id)
	}
	if b.makeRoom() {
		t.Fatal("room for a fourth game while three are going on")
	}
	b.games["a"].Winner = "X"
	b.games["b"].Winner = "draw"
	if !b.makeRoom() {
		t.Fatal("no room after two games ended")
	}
	if _, ok := b.games["c"]; !ok || len(b.games) != 1 {
		t.Errorf("games held %v, want only the one going on", b.games)
	}
}
