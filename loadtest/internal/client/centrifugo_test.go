package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCentrifugoCommands(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want map[string]any
	}{
		{"connect", AppendCentrifugoConnect(nil),
			map[string]any{"id": 1.0, "connect": map[string]any{"name": "loadtest"}}},
		{"subscribe", AppendCentrifugoSubscribe([]byte("junk")[:0], `room:"7"`),
			map[string]any{"id": 2.0, "subscribe": map[string]any{"channel": `room:"7"`}}},
		{"publish", append(append(append([]byte(CentrifugoPublishPrefix), "42"...), CentrifugoPublishMiddle("room:3")...), "Tabc"+CentrifugoPublishSuffix...),
			map[string]any{"id": 42.0, "publish": map[string]any{"channel": "room:3", "data": "Tabc"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal(tc.got, &got); err != nil {
				t.Fatalf("%s: %v", tc.got, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s decodes to %v, want %v", tc.got, got, tc.want)
			}
		})
	}
}

func TestNextCentrifugo(t *testing.T) {
	type line struct {
		kind CentrifugoLineKind
		data string
	}
	for _, tc := range []struct {
		name string
		msg  string
		want []line
	}{
		{"ping", `{}`, []line{{CentrifugoPing, ""}}},
		{"publication with string data", `{"push":{"channel":"room:1","pub":{"data":"T0011xx"}}}`,
			[]line{{CentrifugoPublication, "T0011xx"}}},
		{"publication with an offset first", `{"push":{"channel":"room:1","pub":{"offset":3,"data":"Tz"}}}`,
			[]line{{CentrifugoPublication, "Tz"}}},
		{"publication with object data", `{"push":{"channel":"room:1","pub":{"data":{"a":1}}}}`,
			[]line{{CentrifugoPublication, `{"a":1}}}}`}}},
		{"publish reply", `{"id":5,"publish":{}}`, []line{{CentrifugoOther, ""}}},
		{"error reply", `{"id":5,"error":{"code":103,"message":"permission denied"}}`, []line{{CentrifugoError, ""}}},
		{"disconnect", `{"push":{"disconnect":{"code":3001,"reason":"shutdown"}}}`, []line{{CentrifugoDisconnect, ""}}},
		{"a push without a publication", `{"push":{"channel":"room:1","join":{}}}`, []line{{CentrifugoOther, ""}}},
		{"unterminated data", `{"push":{"pub":{"data":"T00`, []line{{CentrifugoOther, ""}}},
		{"several lines", "{\"id\":3,\"publish\":{}}\n{\"push\":{\"channel\":\"c\",\"pub\":{\"data\":\"A\"}}}\n{}",
			[]line{{CentrifugoOther, ""}, {CentrifugoPublication, "A"}, {CentrifugoPing, ""}}},
		{"a trailing newline", "{}\n", []line{{CentrifugoPing, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []line
			for rest := []byte(tc.msg); rest != nil; {
				var l CentrifugoLine
				l, rest = NextCentrifugo(rest)
				got = append(got, line{l.Kind, string(l.Data)})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("lines %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextCentrifugoAllocs(t *testing.T) {
	msg := []byte(`{"push":{"channel":"room:1","pub":{"data":"T0011xx"}}}`)
	if n := testing.AllocsPerRun(100, func() { NextCentrifugo(msg) }); n != 0 {
		t.Errorf("NextCentrifugo allocates %v times, want 0", n)
	}
}

func TestParseProtocol(t *testing.T) {
	for _, s := range []string{"stomp", "centrifugo"} {
		p, err := ParseProtocol(s)
		if err != nil || p.String() != s {
			t.Errorf("ParseProtocol(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParseProtocol("mqtt"); err == nil {
		t.Error("ParseProtocol(mqtt) succeeded")
	}
}
