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
