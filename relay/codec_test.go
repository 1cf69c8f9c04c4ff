package relay

import (
	"slices"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers []stompframe.Header
		body    []byte
	}{
		{"empty", nil, nil},
		{"text", []stompframe.Header{{Name: "content-type", Value: "text/plain"}}, []byte("hello")},
		{"binary with NUL", []stompframe.Header{{Name: "x", Value: ""}, {Name: "y:z", Value: "a\nb"}}, []byte{0, 1, 0xff, 0}},
		{"long", []stompframe.Header{{Name: strings.Repeat("n", 300), Value: strings.Repeat("v", 70000)}}, make([]byte, 65536)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := broker.NewMessageParts("ID-1", "/topic/x", tt.headers, tt.body)
			p := string(appendMessage(nil, "inst", m))
			w, err := decodeMessage(p, "other")
			if err != nil {
				t.Fatalf("decodeMessage: %v", err)
			}
			if w.instance != "inst" || w.id != "ID-1" || w.dest != "/topic/x" {
				t.Errorf("got instance %q id %q dest %q, want inst, ID-1, /topic/x", w.instance, w.id, w.dest)
			}
			if !slices.Equal(w.headers, tt.headers) {
				t.Errorf("got headers %q, want %q", w.headers, tt.headers)
			}
			if string(w.body) != string(tt.body) {
				t.Errorf("got body of %d bytes, want %d", len(w.body), len(tt.body))
			}
		})
	}
}

// A relay's own messages are recognised from the instance id alone.
func TestDecodeSkipsOwn(t *testing.T) {
	t.Parallel()
	m := broker.NewMessageParts("ID-1", "/topic/x", nil, []byte("b"))
	w, err := decodeMessage(string(appendMessage(nil, "me", m)), "me")
	if err != nil || w.instance != "me" || w.dest != "" {
		t.Errorf("decodeMessage(own) = instance %q dest %q err %v, want me, empty, nil", w.instance, w.dest, err)
	}
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	good := string(appendMessage(nil, "i", broker.NewMessageParts("id", "/d", []stompframe.Header{{Name: "a", Value: "b"}}, nil)))
	tests := []struct {
		name    string
		payload string
	}{
		{"empty", ""},
		{"unknown version", "\x02" + good[1:]},
		{"truncated instance", "\x01\x05ab"},
		{"truncated headers", good[:len(good)-2]},
		{"varint overflow", "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"},
		{"huge header count", "\x01\x01i\x01x\x01d\xff\xff\x03"},
		{"reserved header", "\x01\x01i\x01x\x01d\x01\x0bdestinationx\x00"},
		{"header value not UTF-8", "\x01\x01i\x01x\x01d\x01\x01a\x01\xff"},
		{"header name not UTF-8", "\x01\x01i\x01x\x01d\x01\x01\xc3\x01v"},
		{"destination not UTF-8", "\x01\x01i\x01x\x02d\xfe\x00"},
		{"message-id not UTF-8", "\x01\x01i\x01\x80\x01d\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := decodeMessage(tt.payload, "other"); err != errMalformed {
				t.Errorf("decodeMessage(%q) error %v, want errMalformed", tt.payload, err)
			}
		})
	}
}

// FuzzDecode feeds arbitrary payloads: no panic, and a payload that
// decodes re-encodes to itself.
func FuzzDecode(f *testing.F) {
	f.Add(string(appendMessage(nil, "i", broker.NewMessageParts("id", "/topic/a", []stompframe.Header{{Name: "k", Value: "v"}}, []byte("body")))))
	f.Add("\x01\x00\x00\x00\x00")
	f.Add("\x01\xff")
	f.Fuzz(func(t *testing.T, p string) {
		w, err := decodeMessage(p, "")
		if err != nil {
			return
		}
		re := string(appendMessage(nil, w.instance, broker.NewMessageParts(w.id, w.dest, w.headers, w.body)))
		if w2, err := decodeMessage(re, ""); err != nil || w2.id != w.id || w2.dest != w.dest || !slices.Equal(w2.headers, w.headers) || string(w2.body) != string(w.body) {
			t.Errorf("re-encoded payload decodes differently: %v", err)
		}
	})
}

func TestChannel(t *testing.T) {
	t.Parallel()
	single, err := New(Config{Client: newUnusedClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := single.Channel("/topic/room.1"), "stompgate:topic:{/topic/room.1}"; got != want {
		t.Errorf("Channel = %q, want %q", got, want)
	}
	if single.Sharded() {
		t.Errorf("Sharded() = true for a single-node client, want false")
	}
	cluster, err := New(Config{Client: newUnusedClusterClient(t), ShardGroups: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.Sharded() {
		t.Errorf("Sharded() = false for a cluster client, want true")
	}
	// The group is recomputed here: this checks the format; TestFNV1a
	// checks the hash.
	g := fnv1a("/topic/room.1") % 8
	want := "stompgate:topic:{" + string(rune('0'+g)) + "}/topic/room.1"
	if got := cluster.Channel("/topic/room.1"); got != want {
		t.Errorf("Channel = %q, want %q", got, want)
	}
}

func TestFNV1a(t *testing.T) {
	t.Parallel()
	// Reference values of 32-bit FNV-1a.
	tests := []struct {
		in   string
		want uint32
	}{
		{"", 0x811c9dc5},
		{"a", 0xe40c292c},
		{"foobar", 0xbf9cf968},
	}
	for _, tt := range tests {
		if got := fnv1a(tt.in); got != tt.want {
			t.Errorf("fnv1a(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
}

func newTestMessage() *broker.Message {
	return broker.NewMessageParts("ID-1", "/topic/x", nil, []byte("body"))
}

func newTestBroker(h broker.Hooks) *broker.Broker {
	return broker.NewWithConfig(broker.Config{Hooks: h})
}
