package stompframe

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeUTF8 checks that UTF-8 headers and any body pass, that a
// header that is not UTF-8 is rejected in every version and however the
// frame is split (a sequence cut between two messages is not an error),
// and that the error names the line without quoting its bytes.
func TestDecodeUTF8(t *testing.T) {
	t.Run("UTF-8 headers and a binary body pass", func(t *testing.T) {
		in := []byte("SEND\ndestination:/topic/caf\u00e9\nx-player:\u00fcn\u00efc\u00f6d\u00e9 \u2713 \U0001F3B2\ncontent-length:4\n\n\xff\xfe\x00\x80\x00")
		want := result{frames: []*Frame{{
			Command: CommandSend,
			Headers: []Header{
				{"destination", "/topic/caf\u00e9"},
				{"x-player", "\u00fcn\u00efc\u00f6d\u00e9 \u2713 \U0001F3B2"},
				{"content-length", "4"},
			},
			Body: []byte("\xff\xfe\x00\x80"),
		}}}
		for _, v := range []Version{V10, V11, V12} {
			checkSplits(t, Limits{}, v, in, want)
		}
	})
	t.Run("a header that is not UTF-8 fails in every version and split", func(t *testing.T) {
		in := []byte("SEND\ndestination:/topic/a\nx-name:\xe2\x9c\n\nbody\x00")
		for _, v := range []Version{V10, V11, V12} {
			checkSplits(t, Limits{}, v, in, result{err: ErrInvalidUTF8})
		}
	})
	t.Run("the detail names the line", func(t *testing.T) {
		d := NewDecoder(Limits{})
		d.Feed([]byte("SEND\ndestination:/topic/a\nx-name:caf\xe9\n\n\x00"))
		_, err := d.Next()
		pe, ok := AsProtocolError(err)
		if !ok || !errors.Is(err, ErrInvalidUTF8) {
			t.Fatalf("Next() error = %v, want a *ProtocolError wrapping ErrInvalidUTF8", err)
		}
		if pe.Message != "invalid UTF-8" {
			t.Errorf("Message = %q, want %q", pe.Message, "invalid UTF-8")
		}
		if !strings.Contains(pe.Detail, "header line 2") || strings.ContainsRune(pe.Detail, '\ufffd') || strings.Contains(pe.Detail, "\xe9") {
			t.Errorf("Detail = %q, want it to name header line 2 and quote none of its bytes", pe.Detail)
		}
	})
}
