package relay

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

// t0 is the fixed instant codec tests seal and open at.
var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// testKey is a key of MinKeyLen bytes.
const testKey = "0123456789abcdef0123456789abcdef"

func testSigner(t testing.TB, key string) *Signer {
	t.Helper()
	s, err := NewSigner(key, 0)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

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
	for _, key := range []string{"", testKey} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/signed=%v", tt.name, key != ""), func(t *testing.T) {
				t.Parallel()
				s := testSigner(t, key)
				m := broker.NewMessageParts("ID-1", "/topic/x", tt.headers, tt.body)
				p := string(appendMessage(nil, s, t0, "inst", m))
				w, reason := decodeMessage(p, "other", s, t0)
				if reason != "" {
					t.Fatalf("decodeMessage: %s", reason)
				}
				if w.instance != "inst" || w.dest != "/topic/x" {
					t.Errorf("got instance %q dest %q, want inst, /topic/x", w.instance, w.dest)
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
}

// A relay's own messages are recognised from the instance id alone.
func TestDecodeSkipsOwn(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", testKey} {
		s := testSigner(t, key)
		m := broker.NewMessageParts("ID-1", "/topic/x", nil, []byte("b"))
		w, reason := decodeMessage(string(appendMessage(nil, s, t0, "me", m)), "me", s, t0)
		if reason != "" || w.instance != "me" || w.dest != "" {
			t.Errorf("signed=%v: decodeMessage(own) = instance %q dest %q reason %q, want me, empty, empty", key != "", w.instance, w.dest, reason)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	good := string(appendMessage(nil, nil, t0, "i", broker.NewMessageParts("id", "/d", []stompframe.Header{{Name: "a", Value: "b"}}, nil)))
	tests := []struct {
		name    string
		payload string
	}{
		{"empty", ""},
		{"unknown version", "\x01" + good[1:]},
		{"no envelope", "\x02"},
		{"unknown flags", "\x02\x07\x01\x01i\x01d\x00"},
		{"short mac", "\x02\x01abc"},
		{"truncated instance", "\x02\x00\x01\x05ab"},
		{"truncated headers", good[:len(good)-2]},
		{"varint overflow", "\x02\x00\x01\x01i\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"},
		{"huge header count", "\x02\x00\x01\x01i\x01d\xff\xff\x03"},
		{"reserved header", "\x02\x00\x01\x01i\x01d\x01\x0bdestination\x01x"},
		{"header value not UTF-8", "\x02\x00\x01\x01i\x01d\x01\x01a\x01\xff"},
		{"header name not UTF-8", "\x02\x00\x01\x01i\x01d\x01\x01\xc3\x01v"},
		{"destination not UTF-8", "\x02\x00\x01\x01i\x02d\xfe\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, reason := decodeMessage(tt.payload, "other", nil, t0); reason != DropMalformed {
				t.Errorf("decodeMessage(%q) = %q, want %q", tt.payload, reason, DropMalformed)
			}
		})
	}
}

// With a key, a payload is refused unless it is signed with that key
// and timestamped within MaxAge of the receiver's clock; without a key,
// signed and unsigned payloads are both taken.
func TestDecodeSigned(t *testing.T) {
	t.Parallel()
	m := broker.NewMessageParts("id", "/topic/a", nil, []byte("body"))
	keyed := testSigner(t, testKey)
	other := testSigner(t, strings.Repeat("x", MinKeyLen))
	signed := string(appendMessage(nil, keyed, t0, "i", m))
	altered := []byte(signed)
	altered[len(altered)-1] ^= 1
	tests := []struct {
		name    string
		payload string
		s       *Signer
		at      time.Time
		want    string
	}{
		{"signed", signed, keyed, t0, ""},
		{"signed, 30s later", signed, keyed, t0.Add(DefaultMaxAge), ""},
		{"signed, 30s earlier", signed, keyed, t0.Add(-DefaultMaxAge), ""},
		{"replayed 31s later", signed, keyed, t0.Add(DefaultMaxAge + time.Second), DropStale},
		{"from 31s ahead", signed, keyed, t0.Add(-DefaultMaxAge - time.Second), DropStale},
		{"unsigned", string(appendMessage(nil, nil, t0, "i", m)), keyed, t0, DropUnsigned},
		{"another key", string(appendMessage(nil, other, t0, "i", m)), keyed, t0, DropBadSignature},
		{"altered body", string(altered), keyed, t0, DropBadSignature},
		{"no key, signed", signed, nil, t0.Add(time.Hour), ""},
		{"no key, unsigned", string(appendMessage(nil, nil, t0, "i", m)), nil, t0, ""},
	}
	for _, tt := range tests {
		if _, reason := decodeMessage(tt.payload, "other", tt.s, tt.at); reason != tt.want {
			t.Errorf("%s: decodeMessage = %q, want %q", tt.name, reason, tt.want)
		}
	}
}

func TestNewSigner(t *testing.T) {
	t.Parallel()
	if s, err := NewSigner("", 0); s != nil || err != nil {
		t.Errorf("NewSigner(\"\") = %v, %v; want nil, nil", s, err)
	}
	_, err := NewSigner("short", 0)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Key is 5 bytes") {
		t.Errorf("NewSigner(short) error %v, want ErrInvalidConfig naming Key", err)
	}
	_, err = NewSigner(testKey, -time.Second)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxAge -1s") {
		t.Errorf("NewSigner(MaxAge -1s) error %v, want ErrInvalidConfig naming MaxAge", err)
	}
}

// FuzzDecode feeds arbitrary payloads, to a relay without a key and to
// one with a key: no panic, and a payload that decodes re-encodes to one
// that decodes the same.
func FuzzDecode(f *testing.F) {
	m := broker.NewMessageParts("id", "/topic/a", []stompframe.Header{{Name: "k", Value: "v"}}, []byte("body"))
	f.Add(string(appendMessage(nil, nil, t0, "i", m)))
	f.Add(string(appendMessage(nil, testSigner(f, testKey), t0, "i", m)))
	f.Add("\x02\x00\x00\x00\x00\x00")
	f.Add("\x02\x01\xff")
	f.Fuzz(func(t *testing.T, p string) {
		for _, s := range []*Signer{nil, testSigner(t, testKey)} {
			w, reason := decodeMessage(p, "", s, t0)
			if reason != "" {
				continue
			}
			re := string(appendMessage(nil, s, t0, w.instance, broker.NewMessageParts("id", w.dest, w.headers, w.body)))
			if w2, reason := decodeMessage(re, "", s, t0); reason != "" || w2.dest != w.dest || !slices.Equal(w2.headers, w.headers) || string(w2.body) != string(w.body) {
				t.Errorf("signed=%v: re-encoded payload decodes differently: %q", s != nil, reason)
			}
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
