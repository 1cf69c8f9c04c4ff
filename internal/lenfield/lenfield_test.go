package lenfield

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestReader(t *testing.T) {
	t.Parallel()
	var b []byte
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendUvarint(b, math.MaxUint64)
	b = binary.AppendUvarint(b, 5)
	b = append(b, "hello"...)
	r := Reader{S: string(b) + "rest"}
	if got := r.Uvarint(); got != 0 {
		t.Errorf("Uvarint = %d, want 0", got)
	}
	if got := r.Uvarint(); got != 300 {
		t.Errorf("Uvarint = %d, want 300", got)
	}
	if got := r.Uvarint(); got != math.MaxUint64 {
		t.Errorf("Uvarint = %d, want MaxUint64", got)
	}
	if got := r.String(); got != "hello" || r.Bad || r.S != "rest" {
		t.Errorf("String = %q (bad %v, left %q), want hello, rest left", got, r.Bad, r.S)
	}

	for _, tc := range []struct {
		name string
		in   string
		read func(*Reader)
	}{
		{"empty", "", func(r *Reader) { r.Uvarint() }},
		{"cut varint", "\x80", func(r *Reader) { r.Uvarint() }},
		{"overflow", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", func(r *Reader) { r.Uvarint() }},
		{"eleven bytes", "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", func(r *Reader) { r.Uvarint() }},
		{"length past the end", "\x05abc", func(r *Reader) { _ = r.String() }},
	} {
		r := Reader{S: tc.in}
		tc.read(&r)
		if !r.Bad {
			t.Errorf("%s: not marked bad", tc.name)
		}
		if r.Uvarint() != 0 || r.String() != "" {
			t.Errorf("%s: a read after the error returned a value", tc.name)
		}
	}
}

// FuzzReader: no input panics, and what reads cleanly matches
// encoding/binary.
func FuzzReader(f *testing.F) {
	f.Add("\x05hello")
	f.Add("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
	f.Fuzz(func(t *testing.T, s string) {
		r := Reader{S: s}
		v := r.Uvarint()
		want, n := binary.Uvarint([]byte(s))
		if (n > 0) == r.Bad || (n > 0 && (v != want || r.S != s[n:])) {
			t.Fatalf("Uvarint(%q) = %d (bad %v), binary.Uvarint = %d, %d", s, v, r.Bad, want, n)
		}
		_ = r.String()
	})
}
