package tictactoe

import (
	"errors"
	"strings"
)

// Game is one game's state.
type Game struct {
	// ID names the game; its state goes to /topic/game.<ID>.
	ID string `json:"game"`
	// Board holds the nine cells, row by row: 'X', 'O' or '.'.
	Board string `json:"board"`
	// X and O are the players' principals; O is empty until the second
	// player joins.
	X string `json:"x"`
	O string `json:"o"`
	// Turn is the mark to play next, "X" or "O"; empty before the game
	// starts and after it ends.
	Turn string `json:"turn"`
	// Winner is "X", "O", "draw", or empty while the game goes on.
	Winner string `json:"winner"`
}

// Errors a move or a join is refused with; their text goes to the
// player.
var (
	ErrGameFull    = errors.New("tictactoe: the game has two players")
	ErrNotAPlayer  = errors.New("tictactoe: you are not a player of this game")
	ErrNotStarted  = errors.New("tictactoe: the game waits for a second player")
	ErrGameOver    = errors.New("tictactoe: the game is over")
	ErrNotYourTurn = errors.New("tictactoe: it is not your turn")
	ErrBadCell     = errors.New("tictactoe: cell must be 0 to 8")
	ErrCellTaken   = errors.New("tictactoe: the cell is taken")
)

// NewGame returns an empty game.
func NewGame(id string) *Game {
	return &Game{ID: id, Board: strings.Repeat(".", 9)}
}

// Join adds the principal p and returns its mark. Joining again returns
// the mark held.
func (g *Game) Join(p string) (string, error) {
	switch p {
	case g.X:
		return "X", nil
	case g.O:
		return "O", nil
	}
	switch {
	case g.X == "":
		g.X = p
		return "X", nil
	case g.O == "":
		g.O = p
		g.Turn = "X"
		return "O", nil
	}
	return "", ErrGameFull
}

// Move plays cell for the principal p.
func (g *Game) Move(p string, cell int) error {
	mark := ""
	switch p {
	case g.X:
		mark = "X"
	case g.O:
		mark = "O"
	default:
		return ErrNotAPlayer
	}
	switch {
	case g.Winner != "":
		return ErrGameOver
	case g.O == "":
		return ErrNotStarted
	case g.Turn != mark:
		return ErrNotYourTurn
	case cell < 0 || cell > 8:
		return ErrBadCell
	case g.Board[cell] != '.':
		return ErrCellTaken
	}
	b := []byte(g.Board)
	b[cell] = mark[0]
	g.Board = string(b)
	g.Turn = "O"
	if mark == "O" {
		g.Turn = "X"
	}
	if w := winner(g.Board); w != "" {
		g.Winner, g.Turn = w, ""
	}
	return nil
}

// lines are the rows, columns and diagonals.
var lines = [8][3]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6}, {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}}

// winner returns "X" or "O" for a completed line, "draw" for a full
// board, or empty.
func winner(b string) string {
	for _, l := range lines {
		if c := b[l[0]]; c != '.' && c == b[l[1]] && c == b[l[2]] {
			return string(c)
		}
	}
	if !strings.Contains(b, ".") {
		return "draw"
	}
	return ""
}
