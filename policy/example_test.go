package policy_test

import (
	"fmt"

	"github.com/stompgate/stompgate/policy"
)

func ExampleDefault() {
	p := policy.Default()
	for _, z := range p.Zones {
		fmt.Printf("%-12s %s burst %-2d max open %-3d %v\n", z.Name, z.Rate, z.Burst, z.MaxConnections, z.Routes)
	}
	// Output:
	// ws_handshake 3r/s burst 5  max open 100 [GET /ws]
	// room_create  2r/s burst 4  max open 0   [POST /rooms]
	// room_join    5r/s burst 10 max open 0   [POST /rooms/{id}/join]
}

func ExampleParse() {
	p, err := policy.Parse([]byte(`
zones:
  - name: chat_history
    rate: 30r/m
    burst: 2
    routes:
      - {method: GET, path: "/rooms/{id}/history", upstream: api}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	z, _ := p.Zone("chat_history")
	fmt.Println(z.Rate, int64(z.Rate), z.Rate.Interval(), z.Size)

	_, err = policy.Parse([]byte(`
zones:
  - name: ws_handshake
    rate: 3r/s
    burst: -1
    routes: [{method: GET, path: /ws, upstream: ws}]
`))
	fmt.Println(err)
	// Output:
	// 30r/m 500 2s 10m
	// policy: zone "ws_handshake": burst -1 is negative
}

func ExampleParseRate() {
	for _, s := range []string{"3r/s", "30r/m", "1r/m"} {
		r, err := policy.ParseRate(s)
		fmt.Println(int64(r), err)
	}
	// Output:
	// 3000 <nil>
	// 500 <nil>
	// 0 policy: rate "1r/m" is not exact in nginx, which would round it down to 16/1000 r/s; use a multiple of 3r/m
}

func ExampleRules_Index() {
	p, err := policy.Parse([]byte(`
zones:
  - {name: ws_handshake, rate: 3r/s, burst: 5, routes: [{method: GET, path: /ws, upstream: ws}]}
destinations:
  - {name: chat, pattern: /topic/chat.*, send: {limit: 5, window: 1s}}
  - {name: game_state, pattern: /topic/game.*.state, delivery: latest, max_subscribers: 10}
  - {name: app, pattern: /app/**}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rules, err := p.Rules()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, dest := range []string{"/topic/chat.lobby", "/topic/chat.a.b", "/topic/game.7.state", "/app/lobby.ready", "/queue/x"} {
		if i := rules.Index(dest); i >= 0 {
			r := rules.Rule(i)
			fmt.Printf("%-20s %-10s send %-5s delivery %s\n", dest, r.Name, r.Send, r.Delivery)
		} else {
			fmt.Printf("%-20s no rule: the defaults\n", dest)
		}
	}
	fmt.Printf("%+v\n", rules.Options("/topic/game.7.state"))
	// Output:
	// /topic/chat.lobby    chat       send 5/1s  delivery all
	// /topic/chat.a.b      no rule: the defaults
	// /topic/game.7.state  game_state send       delivery latest
	// /app/lobby.ready     app        send       delivery all
	// /queue/x             no rule: the defaults
	// {Rule:game_state Latest:true MaxSubscribers:10}
}
