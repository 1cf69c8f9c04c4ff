package broker

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

// allVersions are the versions a subscription may have.
var allVersions = []stompframe.Version{stompframe.V10, stompframe.V11, stompframe.V12}

func TestNewMessageHeaders(t *testing.T) {
	t.Parallel()
	f := send("hello",
		"destination", "/topic/a",
		"destination", "/topic/evil",
		"content-type", "text/plain",
		"content-length", "999",
		"receipt", "r-1",
		"transaction", "tx-1",
		"message-id", "forged",
		"subscription", "forged",
		"ack", "forged",
		"x-user", "first",
		"content-type", "application/json",
		"x-user", "second",
		"x-other", "",
	)
	m := NewMessage("id-1", f)
	if m.ID != "id-1" || m.Destination != "/topic/a" {
		t.Errorf("ID, Destination = %q, %q, want id-1, /topic/a", m.ID, m.Destination)
	}
	want := []stompframe.Header{
		{Name: "content-type", Value: "text/plain"},
		{Name: "x-user", Value: "first"},
		{Name: "x-other", Value: ""},
	}
	if got := m.Headers(); !slices.Equal(got, want) {
		t.Errorf("Headers() = %v, want %v", got, want)
	}
	if got := string(m.Body()); got != "hello" {
		t.Errorf("Body() = %q, want hello", got)
	}
}

// TestNewMessageManyHeaders checks a message with more user headers than
// fit in the Message itself.
func TestNewMessageManyHeaders(t *testing.T) {
	t.Parallel()
	kv := []string{"destination", "/topic/a"}
	var want []stompframe.Header
	for i := range 20 {
		name, value := "h"+strconv.Itoa(i), strings.Repeat("v", i*10)
		kv = append(kv, name, value)
		want = append(want, stompframe.Header{Name: name, Value: value})
	}
	m := NewMessage("id", send("", kv...))
	if got := m.Headers(); !slices.Equal(got, want) {
		t.Errorf("Headers() = %v, want %v", got, want)
	}
	sub := NewSubscription("s", "/topic/a", AckAuto, stompframe.V12, &recorder{})
	got := decode(t, m.AppendFrame(nil, sub), stompframe.V12)
	for _, h := range want {
		if v, _ := got.Lookup(h.Name); v != h.Value {
			t.Errorf("MESSAGE header %s = %q, want %q", h.Name, v, h.Value)
		}
	}
}

func TestNewMessageCopies(t *testing.T) {
	t.Parallel()
	f := send("original", "destination", "/topic/a", "x", "1")
	m := NewMessage("id", f)
	copy(f.Body, "XXXXXXXX")
	f.Headers[1].Value = "changed"
	f.Headers = f.Headers[:0]
	if got := string(m.Body()); got != "original" {
		t.Errorf("Body() = %q after the frame was reused, want original", got)
	}
	if got := m.Headers(); len(got) != 1 || got[0].Value != "1" {
		t.Errorf("Headers() = %v after the frame was reused, want [{x 1}]", got)
	}
}

func TestNewMessageBinary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
		want bool
	}{
		{"empty", nil, false},
		{"ascii", []byte("hello"), false},
		{"utf-8", []byte("héllo wörld ✓"), false},
		{"NUL is valid UTF-8", []byte("a\x00b"), false},
		{"invalid byte", []byte{0xff, 0xfe}, true},
		{"truncated sequence", []byte("caf\xc3"), true},
		{"overlong", []byte{0xc0, 0xaf}, true},
	}
	for _, tt := range tests {
		f := &stompframe.Frame{Command: "SEND", Headers: []stompframe.Header{{Name: "destination", Value: "/t"}}, Body: tt.body}
		if got := NewMessage("id", f).Binary; got != tt.want {
			t.Errorf("%s: Binary = %v, want %v", tt.name, got, tt.want)
		}
		if got := NewMessageParts("id", "/t", nil, tt.body).Binary; got != tt.want {
			t.Errorf("%s: NewMessageParts Binary = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAppendFrameDecodes(t *testing.T) {
	t.Parallel()
	bodies := []struct {
		name string
		body []byte
	}{
		{"text", []byte(`{"text":"hi"}`)},
		{"empty", nil},
		{"NUL inside", []byte("before\x00after\x00")},
		{"binary", []byte{0xff, 0x00, 0xfe, '\n', 0x00}},
		{"large", bytes.Repeat([]byte("0123456789"), 3000)},
	}
	for _, bt := range bodies {
		for _, v := range allVersions {
			t.Run(bt.name+"/"+v.String(), func(t *testing.T) {
				t.Parallel()
				f := send(string(bt.body),
					"destination", "/topic/room.1",
					"content-type", "application/octet-stream",
					"content-length", "1", // wrong on purpose: recomputed
					"x-trace", "abc",
					"receipt", "r-9",
				)
				m := NewMessage("id-7", f)
				sub := NewSubscription("sub-3", "/topic/room.1", AckAuto, v, &recorder{})
				b := New()
				b.Subscribe(sub)
				b.Publish(m)
				out := m.AppendFrame([]byte("prefix"), sub)
				if !bytes.HasPrefix(out, []byte("prefix")) {
					t.Fatalf("AppendFrame overwrote dst: %q", out[:min(len(out), 20)])
				}
				out = out[len("prefix"):]
				if size := m.Size(sub); size < len(out) {
					t.Errorf("Size() = %d, below the frame's %d bytes", size, len(out))
				}
				got := decode(t, out, v)
				if got.Command != "MESSAGE" {
					t.Errorf("command %q, want MESSAGE", got.Command)
				}
				want := []stompframe.Header{
					{Name: "subscription", Value: "sub-3"},
					{Name: "destination", Value: "/topic/room.1"},
					{Name: "message-id", Value: "id-7"},
					{Name: "content-type", Value: "application/octet-stream"},
					{Name: "x-trace", Value: "abc"},
					{Name: "content-length", Value: strconv.Itoa(len(bt.body))},
				}
				if !slices.Equal(got.Headers, want) {
					t.Errorf("headers %v, want %v", got.Headers, want)
				}
				if !bytes.Equal(got.Body, bt.body) {
					t.Errorf("body %q, want %q", got.Body, bt.body)
				}
			})
		}
	}
}

func TestAppendFrameAckHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v       stompframe.Version
		ack     AckMode
		wantAck bool
	}{
		{stompframe.V12, AckAuto, false},
		{stompframe.V12, AckClient, true},
		{stompframe.V12, AckClientIndividual, true},
		{stompframe.V11, AckClient, false},
		{stompframe.V11, AckClientIndividual, false},
		{stompframe.V10, AckClient, false},
		{stompframe.V10, AckAuto, false},
	}
	for _, tt := range tests {
		m := NewMessage("id-5", send("x", "destination", "/t"))
		sub := NewSubscription("s", "/t", tt.ack, tt.v, &recorder{})
		out := m.AppendFrame(nil, sub)
		f := decode(t, out, tt.v)
		ack, ok := f.Lookup("ack")
		if ok != tt.wantAck || (ok && ack != "id-5") {
			t.Errorf("%v %v: ack header %q, %v; want present %v with the message-id", tt.v, tt.ack, ack, ok, tt.wantAck)
		}
		if size := m.Size(sub); size < len(out) {
			t.Errorf("%v %v: Size() = %d, below the frame's %d bytes", tt.v, tt.ack, size, len(out))
		}
	}
}

// TestAppendFrameEscaping checks the header escaping of each version on
// the bytes written, for a user header, the subscription id and the
// destination.
func TestAppendFrameEscaping(t *testing.T) {
	t.Parallel()
	const value = "a:b\nc\\d\re"
	tests := []struct {
		v    stompframe.Version
		want string // the x-note header line
	}{
		// 1.0 has no escapes: LF and CR would end the line, so they
		// travel as spaces.
		{stompframe.V10, "x-note:a:b c\\d e\n"},
		{stompframe.V11, `x-note:a\cb\nc\\d e` + "\n"},
		{stompframe.V12, `x-note:a\cb\nc\\d\re` + "\n"},
	}
	for _, tt := range tests {
		m := NewMessage("id", send("", "destination", "/t", "x-note", value))
		sub := NewSubscription("s", "/t", AckAuto, tt.v, &recorder{})
		b := New()
		b.Subscribe(sub)
		b.Publish(m)
		out := string(m.AppendFrame(nil, sub))
		if !strings.Contains(out, "\n"+tt.want) {
			t.Errorf("%v: frame %q does not hold the header line %q", tt.v, out, tt.want)
		}
	}

	// Round trip where the version can carry the value.
	for _, tt := range []struct {
		v     stompframe.Version
		value string
	}{
		{stompframe.V11, "a:b\nc\\d"},
		{stompframe.V12, value},
	} {
		m := NewMessage("id", send("", "destination", "/t:x\ny", "x-note", tt.value, "x:colon", "1"))
		sub := NewSubscription("sub:1\n2", "/t:x\ny", AckAuto, tt.v, &recorder{})
		b := New()
		b.Subscribe(sub)
		b.Publish(m)
		f := decode(t, m.AppendFrame(nil, sub), tt.v)
		for _, h := range []stompframe.Header{
			{Name: "subscription", Value: "sub:1\n2"},
			{Name: "destination", Value: "/t:x\ny"},
			{Name: "x-note", Value: tt.value},
			{Name: "x:colon", Value: "1"},
		} {
			if got, _ := f.Lookup(h.Name); got != h.Value {
				t.Errorf("%v: header %q = %q, want %q", tt.v, h.Name, got, h.Value)
			}
		}
	}
}

// TestNoHeaderInjectionIntoOlderVersions publishes, as a 1.2 client can,
// header values and names holding LF, CR and colons, and decodes the
// MESSAGE each version's subscriber gets: none may carry a header the
// publisher smuggled in, and the body must arrive whole.
func TestNoHeaderInjectionIntoOlderVersions(t *testing.T) {
	t.Parallel()
	m := NewMessage("id", send("hello", "destination", "/t",
		"x-a", "1\ncontent-length:0\nx-forged:1",
		"x-b\ncontent-type:evil", "2\r\nx-forged:2"))
	b := New()
	for _, v := range []stompframe.Version{stompframe.V10, stompframe.V11, stompframe.V12} {
		sub := NewSubscription("s", "/t", AckAuto, v, &recorder{})
		b.Subscribe(sub)
		b.Publish(m)
		f := decode(t, m.AppendFrame(nil, sub), v)
		for _, h := range f.Headers {
			if strings.HasPrefix(h.Name, "x-forged") || h.Name == "content-type" {
				t.Errorf("%v: a forged header %q:%q reached the subscriber", v, h.Name, h.Value)
			}
		}
		if got, _ := f.Lookup("content-length"); got != "5" {
			t.Errorf("%v: content-length %q, want 5", v, got)
		}
		if string(f.Body) != "hello" {
			t.Errorf("%v: body %q, want hello", v, f.Body)
		}
		b.Unsubscribe(sub)
	}
}

// TestAppendFrameUnpublishedVersion checks AppendFrame for a subscription
// whose version the message was not published to: the frame must still
// be complete.
func TestAppendFrameUnpublishedVersion(t *testing.T) {
	t.Parallel()
	for _, v := range allVersions {
		m := NewMessage("id-1", send("body", "destination", "/t", "x-note", "a:b"))
		sub := NewSubscription("s", "/t", AckClient, v, &recorder{})
		out := m.AppendFrame(nil, sub)
		if size := m.Size(sub); size < len(out) {
			t.Errorf("%v: Size() = %d, below the frame's %d bytes", v, size, len(out))
		}
		f := decode(t, out, v)
		if got := string(f.Body); got != "body" {
			t.Errorf("%v: body %q, want body", v, got)
		}
		if got := f.Get("x-note"); got != "a:b" {
			t.Errorf("%v: x-note = %q, want a:b", v, got)
		}
		// Publishing afterwards gives the same bytes.
		b := New()
		b.Subscribe(sub)
		b.Publish(m)
		if again := m.AppendFrame(nil, sub); !bytes.Equal(again, out) {
			t.Errorf("%v: AppendFrame after Publish = %q, before %q", v, again, out)
		}
	}
}

// TestPublishMixedVersions publishes one message to subscribers of every
// version and checks each gets a frame it can decode.
func TestPublishMixedVersions(t *testing.T) {
	t.Parallel()
	b := New()
	subs := map[stompframe.Version]*Subscription{}
	r := &recorder{}
	for _, v := range allVersions {
		subs[v] = NewSubscription("s"+v.String(), "/topic/a", AckAuto, v, r)
		b.Subscribe(subs[v])
	}
	m, n := publish(b, "/topic/a", "x\x00y")
	if n != 3 {
		t.Fatalf("Publish delivered %d, want 3", n)
	}
	for _, d := range r.deliveries() {
		f := decode(t, d.msg.AppendFrame(nil, d.sub), d.sub.Version)
		if f.Get("subscription") != d.sub.ID || f.Get("message-id") != m.ID || string(f.Body) != "x\x00y" {
			t.Errorf("%v: frame %v %q", d.sub.Version, f.Headers, f.Body)
		}
	}
}

// TestTailLen checks that tailLen is the shared encoding's length, and
// that the encoding holds at most tailSlack bytes more than that, however
// many bytes its headers escape.
func TestTailLen(t *testing.T) {
	t.Parallel()
	values := []string{"", "plain", "a:b", "line\nbreak", `back\slash`, "cr\r", strings.Repeat(":\\\n\r", 50)}
	bodies := []string{"", "x", strings.Repeat("y", 9), strings.Repeat("z", 10), strings.Repeat("w", 12345)}
	for _, val := range values {
		for _, body := range bodies {
			m := NewMessage("id-"+val, send(body, "destination", "/d"+val, "h"+val, val, "k", val))
			for _, v := range allVersions {
				m.prepare(v)
				tail := m.tail[versionIndex(v)]
				if want := m.tailLen(v); len(tail) != want || cap(tail) > want+tailSlack {
					t.Errorf("value %q body %d bytes %v: tail len %d cap %d, want len %d (tailLen), cap at most %d", val, len(body), v, len(tail), cap(tail), want, want+tailSlack)
				}
			}
		}
	}
}

func TestNewMessageParts(t *testing.T) {
	t.Parallel()
	hs := []stompframe.Header{{Name: "content-type", Value: "text/plain"}}
	m := NewMessageParts("id-3", "/topic/x", hs, []byte("relayed"))
	if m.ID != "id-3" || m.Destination != "/topic/x" || m.Binary {
		t.Errorf("NewMessageParts = %+v", m)
	}
	sub := NewSubscription("s", "/topic/x", AckAuto, stompframe.V12, &recorder{})
	f := decode(t, m.AppendFrame(nil, sub), stompframe.V12)
	if f.Get("content-type") != "text/plain" || string(f.Body) != "relayed" || f.Get("content-length") != "7" {
		t.Errorf("frame %v %q", f.Headers, f.Body)
	}
}

func TestRedirected(t *testing.T) {
	t.Parallel()
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("for you\x00only")}
	f.Add("destination", "/user/alice/queue/inbox")
	f.Add("x:tag", "a\nb")
	m := NewMessage("id-4", f)
	c := m.Redirected("/user/queue/inbox")
	if c.ID != m.ID || c.Destination != "/user/queue/inbox" || c.Binary != m.Binary {
		t.Errorf("Redirected = %+v", c)
	}
	for _, v := range []stompframe.Version{stompframe.V10, stompframe.V11, stompframe.V12} {
		sub := NewSubscription("s", "/user/alice/queue/inbox", AckClient, v, &recorder{})
		want := NewMessageParts(m.ID, c.Destination, m.Headers(), m.Body()).AppendFrame(nil, sub)
		got := c.AppendFrame(nil, sub)
		if !bytes.Equal(got, want) {
			t.Errorf("%v: AppendFrame = %q, want %q", v, got, want)
		}
		if n := c.Size(sub); n < len(got) {
			t.Errorf("%v: Size = %d, below the %d bytes written", v, n, len(got))
		}
	}
	for i, tail := range c.tail {
		if tail != nil {
			t.Errorf("tail[%d] encoded ahead of AppendFrame", i)
		}
	}
}

func TestDecimalLen(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 9, 10, 99, 100, 12345, 1 << 30} {
		if got, want := decimalLen(n), len(strconv.Itoa(n)); got != want {
			t.Errorf("decimalLen(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestNewMessageDropsReserved: headers the server sets itself never pass
// from a SEND to its MESSAGE: a client cannot forge a message id, a
// history position or a recovery outcome, nor leak its token.
func TestNewMessageDropsReserved(t *testing.T) {
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("x")}
	f.Add("destination", "/topic/a")
	for _, n := range []string{"message-id", "subscription", "ack", "token", "x-stream-offset", "x-stream-epoch", "recovered", "recovery-reason", "receipt", "transaction"} {
		f.Add(n, "forged")
	}
	f.Add("kept", "yes")
	m := NewMessage("id-1", f)
	if hs := m.Headers(); len(hs) != 1 || hs[0].Name != "kept" {
		t.Errorf("headers passed through: %v, want only kept", hs)
	}
}
