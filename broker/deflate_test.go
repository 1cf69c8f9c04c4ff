package broker

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/stompframe"
)

// inflateMessage decompresses a permessage-deflate message as a client
// does: the message, then the four bytes its sender left off.
func inflateMessage(t *testing.T, p []byte) []byte {
	t.Helper()
	r := flate.NewReader(io.MultiReader(bytes.NewReader(p), bytes.NewReader([]byte{0, 0, 0xff, 0xff})))
	out, err := io.ReadAll(r)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("inflating %d bytes: %v", len(p), err)
	}
	return out
}

func TestAppendDeflatedFrame(t *testing.T) {
	t.Parallel()
	body := strings.Repeat(`{"room":"lobby","text":"hello there, how is the game going?"}`, 8)
	m := NewMessage("m-1", send(body, "destination", "/topic/a", "x-user", "a:b\nc"))
	longID := strings.Repeat("s", 300)
	for _, v := range allVersions {
		for _, ack := range []AckMode{AckAuto, AckClient} {
			for _, id := range []string{"sub-1", longID} {
				sub := NewSubscription(id, "/topic/a", ack, v, nil)
				want := m.AppendFrame(nil, sub)
				z := m.AppendDeflatedFrame(nil, sub, 1)
				if got := inflateMessage(t, z); !bytes.Equal(got, want) {
					t.Errorf("v%v ack %v id %d bytes: inflated %q, want %q", v, ack, len(id), got, want)
				}
				if len(id) < 100 && len(z) >= len(want) {
					t.Errorf("v%v ack %v: compressed %d bytes, not under the frame's %d", v, ack, len(z), len(want))
				}
			}
		}
	}
}

// TestAppendDeflatedFrameJoined checks that frames joined by
// wsconn.AppendSyncFlush make one message of both, as a batch is sent.
func TestAppendDeflatedFrameJoined(t *testing.T) {
	t.Parallel()
	a := NewMessage("m-1", send(strings.Repeat("first ", 50), "destination", "/topic/a"))
	b := NewMessage("m-2", send(strings.Repeat("second ", 50), "destination", "/topic/a"))
	sub := NewSubscription("0", "/topic/a", AckAuto, stompframe.V12, nil)
	z := a.AppendDeflatedFrame(nil, sub, 1)
	z = wsconn.AppendSyncFlush(z)
	z = b.AppendDeflatedFrame(z, sub, 1)
	want := b.AppendFrame(a.AppendFrame(nil, sub), sub)
	if got := inflateMessage(t, z); !bytes.Equal(got, want) {
		t.Errorf("inflated %q, want %q", got, want)
	}
}

// TestAppendDeflatedFrameRedirected checks a copy addressed elsewhere,
// which has no tail prepared.
func TestAppendDeflatedFrameRedirected(t *testing.T) {
	t.Parallel()
	m := NewMessage("m-1", send(strings.Repeat("x", 400), "destination", "/user/u/queue/a")).Redirected("/user/queue/a")
	sub := NewSubscription("0", "/user/queue/a", AckAuto, stompframe.V11, nil)
	if got, want := inflateMessage(t, m.AppendDeflatedFrame(nil, sub, 9)), m.AppendFrame(nil, sub); !bytes.Equal(got, want) {
		t.Errorf("inflated %q, want %q", got, want)
	}
}

// TestDeflatedOncePerVersion checks that many writers asking for one
// message's compressed encoding at once compress it once per version,
// and that the memory it holds counts it. Not parallel: it sets the
// package's hook.
func TestDeflatedOncePerVersion(t *testing.T) {
	var n atomic.Int64
	deflateHook = func() { n.Add(1) }
	defer func() { deflateHook = nil }()
	m := NewMessage("m-1", send(strings.Repeat("state ", 700), "destination", "/topic/game"))
	before := m.MemSize()
	subs := []*Subscription{
		NewSubscription("0", "/topic/game", AckAuto, stompframe.V12, nil),
		NewSubscription("1", "/topic/game", AckClient, stompframe.V12, nil),
		NewSubscription("2", "/topic/game", AckAuto, stompframe.V11, nil),
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := subs[i%len(subs)]
			if got, want := inflateMessage(t, m.AppendDeflatedFrame(nil, sub, 1)), m.AppendFrame(nil, sub); !bytes.Equal(got, want) {
				t.Errorf("writer %d: inflated frame differs", i)
			}
		}()
	}
	wg.Wait()
	if got := n.Load(); got != 2 {
		t.Errorf("compressions = %d for 64 writers of 2 versions, want 2", got)
	}
	if after := m.MemSize(); after <= before {
		t.Errorf("MemSize() = %d after compressing, want more than %d", after, before)
	}
}

func BenchmarkAppendDeflatedFrame(b *testing.B) {
	m := NewMessage("m-1", send(strings.Repeat(`{"text":"hello there"}`, 20), "destination", "/topic/a"))
	sub := NewSubscription("sub-1", "/topic/a", AckAuto, stompframe.V12, nil)
	buf := m.AppendDeflatedFrame(nil, sub, 1)
	b.ReportAllocs()
	for b.Loop() {
		buf = m.AppendDeflatedFrame(buf[:0], sub, 1)
	}
}
