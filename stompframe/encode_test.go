package stompframe

import (
	"testing"
)

func TestAppend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		v     Version
		frame *Frame
		want  string
	}{
		{
			name:  "1.2 escapes headers",
			v:     V12,
			frame: &Frame{Command: "MESSAGE", Headers: hdrs("dest:x", "a\nb\r\\"), Body: []byte("hi")},
			want:  "MESSAGE\ndest\\cx:a\\nb\\r\\\\\n\nhi\x00",
		},
		{
			name:  "1.1 escapes without CR",
			v:     V11,
			frame: &Frame{Command: "MESSAGE", Headers: hdrs("a", "x:y\n")},
			want:  "MESSAGE\na:x\\cy\\n\n\n\x00",
		},
		{
			name:  "1.0 writes raw",
			v:     V10,
			frame: &Frame{Command: "MESSAGE", Headers: hdrs("a", `x:y\`)},
			want:  "MESSAGE\na:x:y\\\n\n\x00",
		},
		{
			name:  "1.0 cannot end a line or move a value",
			v:     V10,
			frame: &Frame{Command: "MESSAGE", Headers: hdrs("a:b\nc", "x\ncontent-length:0\r\n")},
			want:  "MESSAGE\na_b c:x content-length:0  \n\n\x00",
		},
		{
			name:  "CONNECTED is never escaped",
			v:     V12,
			frame: &Frame{Command: "CONNECTED", Headers: hdrs("server", `gate:1\2`)},
			want:  "CONNECTED\nserver:gate:1\\2\n\n\x00",
		},
		{
			name:  "body with NUL kept as is",
			v:     V12,
			frame: &Frame{Command: "SEND", Headers: hdrs("content-length", "3"), Body: []byte("a\x00b")},
			want:  "SEND\ncontent-length:3\n\na\x00b\x00",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(Append(nil, tt.frame, tt.v)); got != tt.want {
				t.Errorf("Append() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppendHeaderHelpers(t *testing.T) {
	t.Parallel()
	var b []byte
	b = AppendHeader(b, "a:b", "c\nd", V12)
	b = AppendHeaderRaw(b, "a:b", "c")
	b = AppendContentLength(b, 1234)
	b = AppendHeartBeat(b)
	if got, want := string(b), "a\\cb:c\\nd\na:b:c\ncontent-length:1234\n\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAppendAllocs(t *testing.T) {
	f := send100Frame()
	f.Add("note", "a:b\nc") // escaping on the path too
	dst := Append(nil, f, V12)
	allocs := testing.AllocsPerRun(100, func() {
		dst = Append(dst[:0], f, V12)
		dst = AppendContentLength(dst, 100)
	})
	if allocs != 0 {
		t.Errorf("Append into a reused buffer allocated %v times, want 0", allocs)
	}
}
