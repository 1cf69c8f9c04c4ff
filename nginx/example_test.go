package nginx_test

import (
	"fmt"
	"strings"

	"github.com/stompgate/stompgate/nginx"
	"github.com/stompgate/stompgate/policy"
)

// ExampleRender renders the default policy, as a file for
// /etc/nginx/conf.d/, in front of two wsserver instances that serve
// WebSockets on /stomp and an application API, and prints the directives
// that carry the limits. The policy's handshake route, GET /ws, lands on
// /stomp.
func ExampleRender() {
	conf, err := nginx.Render(policy.Default(), nginx.Config{
		WSUpstreams:  []string{"10.0.0.1:8080", "10.0.0.2:8080"},
		APIUpstreams: []string{"10.0.1.1:9000"},
		WSPath:       "/stomp",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.TrimSpace(line)
		for _, prefix := range []string{"limit_req", "limit_conn", "location", "error_page", "upstream", "server 10.", "REJECTED"} {
			if strings.HasPrefix(line, prefix) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// limit_req_zone $stompgate_key_get zone=ws_handshake:10m rate=3r/s;
	// limit_req_zone $stompgate_key_post zone=room_create:10m rate=2r/s;
	// limit_req_zone $stompgate_key_post zone=room_join:10m rate=5r/s;
	// limit_conn_zone $stompgate_key_get zone=ws_handshake-conn:10m;
	// REJECTED    1;
	// REJECTED    2;
	// upstream stompgate_ws {
	// server 10.0.0.1:8080;
	// server 10.0.0.2:8080;
	// upstream stompgate_api {
	// server 10.0.1.1:9000;
	// limit_req_status 429;
	// limit_req_log_level warn;
	// limit_conn_status 429;
	// limit_conn_log_level warn;
	// location = /stomp {
	// limit_req zone=ws_handshake burst=5 nodelay;
	// limit_conn ws_handshake-conn 100;
	// error_page 429 @stompgate_429_1s;
	// location = /rooms {
	// limit_req zone=room_create burst=4 nodelay;
	// error_page 429 @stompgate_429_1s;
	// location ~ "^/rooms/[^/]+/join$" {
	// limit_req zone=room_join burst=10 nodelay;
	// error_page 429 @stompgate_429_1s;
	// location = /metrics {
	// location / {
	// location @stompgate_429_1s {
}
