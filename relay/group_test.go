package relay

import "testing"

// A group's down count follows every change of its channels.
func TestGroupDown(t *testing.T) {
	g := &group{channels: make(map[string]bool)}
	for i, step := range []struct {
		do   func()
		down int
	}{
		{func() { g.setLive("a", false) }, 1},
		{func() { g.setLive("b", false) }, 2},
		{func() { g.setLive("a", true) }, 1},
		{func() { g.setLive("a", true) }, 1}, // a repeated confirmation
		{func() { g.drop("a") }, 1},
		{func() { g.drop("a") }, 1},
		{func() { g.setLive("b", true) }, 0},
		{func() { g.setLive("c", false) }, 1},
		{func() { g.allDown() }, 2},
		{func() { g.drop("b") }, 1},
	} {
		step.do()
		if got := g.down(); got != step.down {
			t.Fatalf("step %d: down %d, want %d", i, got, step.down)
		}
	}
}
