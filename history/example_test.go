package history_test

import (
	"context"
	"fmt"

	"github.com/stompgate/stompgate/history"
)

// A client that received up to offset 2 comes back after two more
// messages; one that presents another epoch is told it cannot recover.
func ExampleSince() {
	store, _ := history.NewMemoryStore(history.MemoryConfig{})
	ctx := context.Background()
	var last history.Position
	for _, m := range []string{"a", "b", "c", "d"} {
		last, _ = store.Append(ctx, "/topic/chat.1", []byte(m), history.Retention{})
	}
	snap, _ := store.Tail(ctx, "/topic/chat.1", history.DefaultMaxRecovery, history.Retention{})

	res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: 3, Epoch: last.Epoch}, 100)
	for _, e := range res.Entries {
		fmt.Printf("replay %d %s\n", e.Offset, e.Data)
	}
	fmt.Println("recovered:", res.Recovered, "next:", res.Next.Offset)

	res = history.Since(snap, history.Start{Kind: history.StartAt, Offset: 3, Epoch: "OLD"}, 100)
	fmt.Println("recovered:", res.Recovered, res.Reason)
	// Output:
	// replay 3 c
	// replay 4 d
	// recovered: true next: 5
	// recovered: false epoch_changed
}

// A Recovery joins the replay and the live messages that arrived while
// the history was read: offset 4 came both ways and is emitted once.
func ExampleRecovery() {
	rc := history.NewRecovery(0, 0)
	rc.Live(history.Message{Offset: 4, Epoch: "E"}) // held
	rc.Live(history.Message{Offset: 5, Epoch: "E"}) // held
	st := rc.Apply(history.Result{
		Entries:   []history.Entry{{Offset: 3}, {Offset: 4}},
		Recovered: true,
		Next:      history.Position{Offset: 5, Epoch: "E"},
	})
	for _, m := range st.Emit {
		fmt.Print(m.Offset, " ")
	}
	fmt.Println("recovered:", st.Recovered, "dropped:", st.Dropped)
	st = rc.Live(history.Message{Offset: 6, Epoch: "E"})
	fmt.Println(st.Emit[0].Offset)
	// Output:
	// 3 4 5 recovered: true dropped: 1
	// 6
}
