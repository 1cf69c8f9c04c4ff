package history

import (
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	for _, pos := range []Position{{1, "E"}, {127, "abc"}, {128, "x"}, {1 << 53, strings.Repeat("e", MaxEpochLen)}} {
		f := AppendFrame(nil, pos, []byte("\x02payload"))
		got, payload, ok := DecodeFrame(string(f))
		if !ok || got != pos || payload != "\x02payload" {
			t.Errorf("DecodeFrame(AppendFrame(%+v)) = %+v, %q, %v", pos, got, payload, ok)
		}
	}
}

func TestDecodeFrameRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, p string }{
		{"empty", ""},
		{"relay payload", "\x02\x00\x00"},
		{"version only", "\x03"},
		{"offset 0", "\x03\x00\x01E"},
		{"no epoch", "\x03\x01\x00"},
		{"epoch past end", "\x03\x01\x05EE"},
		{"epoch too long", "\x03\x01\x41" + strings.Repeat("e", 65)},
		{"epoch with control byte", "\x03\x01\x02E\n"},
		{"varint too long", "\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x01E"},
		{"varint overflow", "\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x01E"},
		{"truncated varint", "\x03\x80"},
	} {
		if pos, _, ok := DecodeFrame(tc.p); ok {
			t.Errorf("%s: DecodeFrame(%q) = %+v, ok; want refused", tc.name, tc.p, pos)
		}
	}
}

// FuzzDecodeFrame feeds arbitrary input whole and in two halves: no
// panic; a frame that decodes re-encodes to the same bytes; and its
// first half either does not decode or decodes to the same position
// with a payload that is a prefix of the whole one.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(string(AppendFrame(nil, Position{1, "E"}, []byte("\x02\x01body"))), 3)
	f.Add(string(AppendFrame(nil, Position{300, "ABCDEFGHIJKLMNOP1"}, nil)), 5)
	f.Add("\x03\x80\x80\x01\x01E", 2)
	f.Add("\x02relay", 1)
	f.Fuzz(func(t *testing.T, p string, cut int) {
		pos, payload, ok := DecodeFrame(p)
		if ok {
			if re := string(AppendFrame(nil, pos, []byte(payload))); re != p {
				// A varint may be encoded with redundant bytes; the
				// re-encoding must decode the same.
				pos2, payload2, ok2 := DecodeFrame(re)
				if !ok2 || pos2 != pos || payload2 != payload {
					t.Fatalf("re-encoded frame decodes to %+v %q %v, want %+v %q", pos2, payload2, ok2, pos, payload)
				}
			}
		}
		if len(p) == 0 {
			return
		}
		cut = int(uint(cut) % uint(len(p)))
		hp, hpayload, hok := DecodeFrame(p[:cut])
		if hok && ok && (hp != pos || !strings.HasPrefix(payload, hpayload)) {
			t.Fatalf("half %q decodes to %+v %q, whole to %+v %q", p[:cut], hp, hpayload, pos, payload)
		}
		if hok && !ok {
			t.Fatalf("half %q decodes but the whole %q does not", p[:cut], p)
		}
	})
}
