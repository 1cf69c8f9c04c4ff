package history_test

import (
	"testing"
	"time"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/relay"
)

// The trust model of frames, with the relay's own Signer: the payload
// inside a frame opens as it was sealed whatever position Redis put in
// front of it, and a payload altered on the way does not. The position
// is not what the signature covers; the Recovery checks it instead.
func TestFrameCarriesSignedPayload(t *testing.T) {
	t.Parallel()
	s, err := relay.NewSigner("0123456789abcdef0123456789abcdef", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sealed := s.Seal(nil, []byte("destination, headers, body"), now)
	for _, pos := range []history.Position{{Offset: 1, Epoch: "E"}, {Offset: 1 << 40, Epoch: "OTHER"}} {
		pos2, payload, ok := history.DecodeFrame(string(history.AppendFrame(nil, pos, sealed)))
		if !ok || pos2 != pos {
			t.Fatalf("DecodeFrame = %+v, %v; want %+v", pos2, ok, pos)
		}
		if body, reason := s.Open(payload, now); reason != "" || body != "destination, headers, body" {
			t.Fatalf("Open(the frame's payload at %+v) = %q, %q", pos, body, reason)
		}
	}
	altered := []byte(string(sealed))
	altered[len(altered)-1] ^= 1
	_, payload, _ := history.DecodeFrame(string(history.AppendFrame(nil, history.Position{Offset: 1, Epoch: "E"}, altered)))
	if _, reason := s.Open(payload, now); reason != relay.DropBadSignature {
		t.Fatalf("Open(altered payload) reason %q, want %q", reason, relay.DropBadSignature)
	}
}
