package presence_test

import (
	"fmt"
	"strings"

	"github.com/stompgate/stompgate/presence"
)

// ExampleTracker watches a room, then one member joins with two tabs:
// the watcher gets the snapshot, then a single join.
func ExampleTracker() {
	tr := presence.New(presence.Config{
		Enabled: func(dest string) bool { return strings.HasPrefix(dest, "/topic/room.") },
	})
	defer tr.Close()

	frames := make(chan string, 4)
	stop, err := tr.Watch("/topic/room.42", func(body []byte) bool {
		frames <- string(body)
		return true
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	fmt.Println(<-frames)

	tab1, _ := tr.Join("/topic/room.42", "alice", "Alice")
	fmt.Println(<-frames)
	tab2, _ := tr.Join("/topic/room.42", "alice", "Alice") // a second tab: no join
	tab2()
	tab1()
	fmt.Println(<-frames)
	// Output:
	// {"type":"snapshot","destination":"/topic/room.42","seq":0,"count":0,"members":[]}
	// {"type":"delta","destination":"/topic/room.42","seq":1,"events":[{"seq":1,"op":"join","principal":"alice","info":"Alice"}]}
	// {"type":"delta","destination":"/topic/room.42","seq":2,"events":[{"seq":2,"op":"leave","principal":"alice"}]}
}
