package stompframe

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzLimits are the limits FuzzDecode runs with: the defaults, and small
// ones that random input can reach.
var fuzzLimits = [2]Limits{
	{},
	{MaxFrameSize: 96, MaxHeaders: 4, MaxHeaderLine: 24},
}

// FuzzDecode checks that decoding never panics, gives the same outcome
// however the input is split into messages, never buffers more than one
// maximum-size frame, and that every decoded frame encodes to bytes that
// decode to an equal frame. mode selects the version (mode%3) and the
// limits (mode/3%2).
func FuzzDecode(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.stomp"))
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed frames in testdata")
	}
	for _, name := range seeds {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for mode := range uint8(6) {
			f.Add(b, mode)
		}
	}
	f.Fuzz(func(t *testing.T, input []byte, mode uint8) {
		v := [3]Version{V12, V11, V10}[mode%3]
		l := fuzzLimits[mode/3%2]
		maxFrame := l.sanitized().MaxFrameSize

		whole, buffered := decodeChunks(l, v, input)
		if buffered > maxFrame+1 {
			t.Fatalf("buffered %d bytes, limit %d", buffered, maxFrame)
		}

		var splits []int
		if len(input) <= 64 {
			for i := 1; i < len(input); i++ {
				splits = append(splits, i)
			}
		} else {
			splits = []int{1, len(input) / 3, len(input) / 2, len(input) - 1}
		}
		for _, i := range splits {
			got, buffered := decodeChunks(l, v, input[:i], input[i:])
			if !resultsEqual(got, whole) {
				t.Fatalf("split at %d: got %v, want %v", i, got, whole)
			}
			if buffered > maxFrame+1 {
				t.Fatalf("split at %d: buffered %d bytes, limit %d", i, buffered, maxFrame)
			}
		}
		if len(input) <= 256 {
			bytewise := make([][]byte, len(input))
			for i := range input {
				bytewise[i] = input[i : i+1]
			}
			got, _ := decodeChunks(l, v, bytewise...)
			if !resultsEqual(got, whole) {
				t.Fatalf("byte by byte: got %v, want %v", got, whole)
			}
		}

		// encode(decode(x)) decodes to the same frames. The limits are
		// loose: escaping a raw colon in a value makes a line longer.
		for _, fr := range whole.frames {
			enc := Append(nil, fr, v)
			again, _ := decodeChunks(Limits{MaxFrameSize: MaxLimit, MaxHeaderLine: MaxLimit, MaxHeaders: MaxLimit}, v, enc)
			if again.err != nil || len(again.frames) != 1 || !framesEqual(again.frames[0], fr) {
				t.Fatalf("re-decoding %q: got %v, want %q", enc, again, Append(nil, fr, v))
			}
		}
	})
}
