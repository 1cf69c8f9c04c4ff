package stompframe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// result is everything a Decoder produced from one input.
type result struct {
	frames     []*Frame
	err        error // the sentinel of the error, if any
	heartBeats uint64
}

func (r result) String() string {
	var b strings.Builder
	for _, f := range r.frames {
		fmt.Fprintf(&b, "%q ", Append(nil, f, V12))
	}
	fmt.Fprintf(&b, "err=%v heartBeats=%d", r.err, r.heartBeats)
	return b.String()
}

// decodeChunks feeds each chunk to a new Decoder as one message and drains
// it. Each chunk is fed from a private copy that is overwritten once Next
// returns (nil, nil), so that a Decoder keeping a reference to a message
// past that point shows up as corrupt frames. It also returns the most the
// Decoder ever buffered after a Next.
func decodeChunks(l Limits, v Version, chunks ...[]byte) (res result, maxBuffered int) {
	d := NewDecoder(l)
	d.SetVersion(v)
	for _, c := range chunks {
		msg := append([]byte(nil), c...)
		d.Feed(msg)
		for {
			f, err := d.Next()
			maxBuffered = max(maxBuffered, d.Buffered())
			if err != nil {
				res.err = errors.Unwrap(err)
				res.heartBeats = d.HeartBeats()
				return res, maxBuffered
			}
			if f == nil {
				break
			}
			res.frames = append(res.frames, f.Clone())
		}
		for i := range msg {
			msg[i] = 0xAA
		}
	}
	res.heartBeats = d.HeartBeats()
	return res, maxBuffered
}

func framesEqual(a, b *Frame) bool {
	if a.Command != b.Command || len(a.Headers) != len(b.Headers) || !bytes.Equal(a.Body, b.Body) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i] != b.Headers[i] {
			return false
		}
	}
	return true
}

func resultsEqual(a, b result) bool {
	if a.err != b.err || a.heartBeats != b.heartBeats || len(a.frames) != len(b.frames) {
		return false
	}
	for i := range a.frames {
		if !framesEqual(a.frames[i], b.frames[i]) {
			return false
		}
	}
	return true
}

// checkSplits decodes input whole, split in two at every position, and one
// byte per message, and fails unless all agree with want.
func checkSplits(t *testing.T, l Limits, v Version, input []byte, want result) {
	t.Helper()
	got, _ := decodeChunks(l, v, input)
	if !resultsEqual(got, want) {
		t.Fatalf("whole: got %v, want %v", got, want)
	}
	for i := 0; i <= len(input); i++ {
		got, _ := decodeChunks(l, v, input[:i], input[i:])
		if !resultsEqual(got, want) {
			t.Fatalf("split at %d: got %v, want %v", i, got, want)
		}
	}
	bytewise := make([][]byte, len(input))
	for i := range input {
		bytewise[i] = input[i : i+1]
	}
	got, _ = decodeChunks(l, v, bytewise...)
	if !resultsEqual(got, want) {
		t.Fatalf("byte by byte: got %v, want %v", got, want)
	}
}

func hdrs(kv ...string) []Header {
	var hs []Header
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, Header{Name: kv[i], Value: kv[i+1]})
	}
	return hs
}

func TestDecodeFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		version    Version
		input      string
		want       []*Frame
		heartBeats uint64
	}{
		{
			name:  "stomp.js CONNECT",
			input: "CONNECT\naccept-version:1.2,1.1,1.0\nheart-beat:10000,10000\n\n\x00",
			want:  []*Frame{{Command: "CONNECT", Headers: hdrs("accept-version", "1.2,1.1,1.0", "heart-beat", "10000,10000")}},
		},
		{
			name:  "no headers no body",
			input: "DISCONNECT\n\n\x00",
			want:  []*Frame{{Command: "DISCONNECT"}},
		},
		{
			name:  "body with NUL and content-length",
			input: "SEND\ndestination:/q\ncontent-length:5\n\nab\x00cd\x00",
			want:  []*Frame{{Command: "SEND", Headers: hdrs("destination", "/q", "content-length", "5"), Body: []byte("ab\x00cd")}},
		},
		{
			name:  "content-length zero with leading zeros",
			input: "SEND\ncontent-length:000\n\n\x00",
			want:  []*Frame{{Command: "SEND", Headers: hdrs("content-length", "000")}},
		},
		{
			name:  "body without content-length",
			input: "SEND\ndestination:/q\n\nhello\nworld\x00",
			want:  []*Frame{{Command: "SEND", Headers: hdrs("destination", "/q"), Body: []byte("hello\nworld")}},
		},
		{
			name:       "heart-beats before, between and after frames",
			input:      "\n\r\nACK\nid:1\n\n\x00\n\n\r\nNACK\nid:2\n\n\x00\r\n\n",
			want:       []*Frame{{Command: "ACK", Headers: hdrs("id", "1")}, {Command: "NACK", Headers: hdrs("id", "2")}},
			heartBeats: 7,
		},
		{
			name:       "heart-beats only",
			input:      "\n\r\n\n",
			heartBeats: 3,
		},
		{
			name:       "CRLF line endings",
			input:      "SUBSCRIBE\r\nid:0\r\ndestination:/topic/a\r\n\r\nx\r\n\x00\r\n",
			want:       []*Frame{{Command: "SUBSCRIBE", Headers: hdrs("id", "0", "destination", "/topic/a"), Body: []byte("x\r\n")}},
			heartBeats: 1,
		},
		{
			name:  "repeated header keeps every occurrence",
			input: "MESSAGE\nfoo:first\nfoo:second\ncontent-length:1\ncontent-length:3\n\nA\x00",
			want:  []*Frame{{Command: "MESSAGE", Headers: hdrs("foo", "first", "foo", "second", "content-length", "1", "content-length", "3"), Body: []byte("A")}},
		},
		{
			name:  "empty value and raw colon in value",
			input: "SEND\nempty:\ntime:12:30\n\n\x00",
			want:  []*Frame{{Command: "SEND", Headers: hdrs("empty", "", "time", "12:30")}},
		},
		{
			name:    "1.0 frame keeps backslashes and colons",
			version: V10,
			input:   "SEND\ndestination:/queue/a:b\npath:C:\\temp\\n\n\nbody\x00",
			want:    []*Frame{{Command: "SEND", Headers: hdrs("destination", "/queue/a:b", "path", "C:\\temp\\n"), Body: []byte("body")}},
		},
		{
			name:  "unknown command passes",
			input: "FOO\n\n\x00",
			want:  []*Frame{{Command: "FOO"}},
		},
		{
			name: "several frames",
			input: "SEND\ndestination:/a\n\n1\x00SEND\ndestination:/b\ncontent-length:1\n\n2\x00" +
				"SUBSCRIBE\nid:s\ndestination:/c\n\n\x00",
			want: []*Frame{
				{Command: "SEND", Headers: hdrs("destination", "/a"), Body: []byte("1")},
				{Command: "SEND", Headers: hdrs("destination", "/b", "content-length", "1"), Body: []byte("2")},
				{Command: "SUBSCRIBE", Headers: hdrs("id", "s", "destination", "/c")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := tt.version
			if v == 0 {
				v = V12
			}
			checkSplits(t, Limits{}, v, []byte(tt.input), result{frames: tt.want, heartBeats: tt.heartBeats})
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	small := Limits{MaxFrameSize: 64, MaxHeaders: 3, MaxHeaderLine: 20}
	tests := []struct {
		name   string
		limits Limits
		input  string
		want   error
		frames int // frames decoded before the error
	}{
		{name: "lower-case command", input: "send\n\n\x00", want: ErrMalformed},
		{name: "command with space", input: "SEND \n\n\x00", want: ErrMalformed},
		{name: "CR without LF before a frame", input: "\rSEND\n\n\x00", want: ErrMalformed},
		{name: "CR without LF after a frame", input: "ACK\n\n\x00\r\r\n", want: ErrMalformed, frames: 1},
		{name: "header without colon", input: "SEND\nnocolon\n\n\x00", want: ErrMalformed},
		{name: "header with empty name", input: "SEND\n:v\n\n\x00", want: ErrMalformed},
		{name: "raw CR in header", input: "SEND\na:b\rc\n\n\x00", want: ErrMalformed},
		{name: "raw CR before CRLF", input: "SEND\na:b\r\r\n\n\x00", want: ErrMalformed},
		{name: "negative content-length", input: "SEND\ncontent-length:-1\n\n\x00", want: ErrMalformed},
		{name: "content-length with space", input: "SEND\ncontent-length: 1\n\nx\x00", want: ErrMalformed},
		{name: "empty content-length", input: "SEND\ncontent-length:\n\n\x00", want: ErrMalformed},
		{name: "no NUL after content-length body", input: "SEND\ncontent-length:1\n\nxy\x00", want: ErrMalformed},
		{name: "huge content-length", input: "SEND\ndestination:/queue/test\ncontent-length:1000000000\n\n", want: ErrFrameTooLarge},
		{name: "overflowing content-length", input: "SEND\ncontent-length:99999999999999999999999999\n\n", want: ErrFrameTooLarge},
		{name: "content-length one past the limit", limits: small, input: "SEND\ncontent-length:40\n\n", want: ErrFrameTooLarge},
		{name: "body one past the limit", limits: small, input: "SEND\n\n" + strings.Repeat("x", 58) + "\x00", want: ErrFrameTooLarge},
		{name: "header line too long", limits: small, input: "SEND\nk:" + strings.Repeat("v", 19) + "\n\n\x00", want: ErrHeaderLineTooLong},
		{name: "command line too long", limits: small, input: strings.Repeat("A", 21) + "\n\n\x00", want: ErrHeaderLineTooLong},
		{name: "header line past the frame limit", limits: Limits{MaxFrameSize: 64}, input: "SEND\nk:" + strings.Repeat("v", 100) + "\n\n\x00", want: ErrFrameTooLarge},
		{name: "too many headers", limits: small, input: "SEND\na:1\nb:2\nc:3\nd:4\n\n\x00", want: ErrTooManyHeaders},
		{name: "bad escape", input: "SEND\na:\\t\n\n\x00", want: ErrBadEscape},
		{name: "header value not UTF-8", input: "SEND\ndestination:/topic/a\nx-name:caf\xe9\n\n\x00", want: ErrInvalidUTF8},
		{name: "header name not UTF-8", input: "SEND\nx-\xff:v\n\n\x00", want: ErrInvalidUTF8},
		{name: "command not UTF-8", input: "SE\xc3ND\n\n\x00", want: ErrInvalidUTF8},
		{name: "overlong NUL in a header", input: "SEND\na:\xc0\x80\n\n\x00", want: ErrInvalidUTF8},
		{name: "UTF-16 surrogate in a header", input: "SEND\na:\xed\xa0\x80\n\n\x00", want: ErrInvalidUTF8},
		{name: "sequence cut by the EOL", input: "SEND\na:\xe2\x9c\nb:\x93\n\n\x00", want: ErrInvalidUTF8},
		{name: "CONNECT login not UTF-8", input: "CONNECT\naccept-version:1.2\nlogin:\x80\n\n\x00", want: ErrInvalidUTF8},
		{name: "not UTF-8 after a good frame", input: "SEND\na:\xe2\x9c\x93\n\n\x00SEND\na:\xe2\n\n\x00", want: ErrInvalidUTF8, frames: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := decodeChunks(tt.limits, V12, []byte(tt.input))
			if got.err != tt.want || len(got.frames) != tt.frames {
				t.Fatalf("got %v, want err=%v after %d frames", got, tt.want, tt.frames)
			}
			checkSplits(t, tt.limits, V12, []byte(tt.input), got)
		})
	}
}

func TestDecodeAtLimits(t *testing.T) {
	t.Parallel()
	small := Limits{MaxFrameSize: 64, MaxHeaders: 3, MaxHeaderLine: 20}
	tests := []struct {
		name  string
		input string
	}{
		{name: "frame of exactly MaxFrameSize", input: "SEND\n\n" + strings.Repeat("x", 57) + "\x00"},
		{name: "content-length frame of exactly MaxFrameSize", input: "SEND\ncontent-length:39\n\n" + strings.Repeat("x", 39) + "\x00"},
		{name: "header line of exactly MaxHeaderLine", input: "SEND\nk:" + strings.Repeat("v", 18) + "\n\n\x00"},
		{name: "header line of exactly MaxHeaderLine with CRLF", input: "SEND\r\nk:" + strings.Repeat("v", 18) + "\r\n\r\n\x00"},
		{name: "exactly MaxHeaders", input: "SEND\na:1\nb:2\nc:3\n\n\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := decodeChunks(small, V12, []byte(tt.input))
			if got.err != nil || len(got.frames) != 1 {
				t.Fatalf("got %v, want one frame", got)
			}
			checkSplits(t, small, V12, []byte(tt.input), got)
		})
	}
}

func TestDecodeEscaping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		version   Version
		command   string
		line      string // one header line, without EOL
		wantName  string
		wantValue string
		wantErr   error
	}{
		{name: "1.2 all escapes", version: V12, command: "SEND", line: `a\cb:x\r\n\c\\y`, wantName: "a:b", wantValue: "x\r\n:\\y"},
		{name: "1.2 tab is fatal", version: V12, command: "SEND", line: `a:\t`, wantErr: ErrBadEscape},
		{name: "1.2 trailing backslash in value is fatal", version: V12, command: "SEND", line: `a:b\`, wantErr: ErrBadEscape},
		{name: "1.2 trailing backslash in name is fatal", version: V12, command: "SEND", line: `a\:b`, wantErr: ErrBadEscape},
		{name: "1.1 escapes", version: V11, command: "SEND", line: `a\cb:x\n\c\\y`, wantName: "a:b", wantValue: "x\n:\\y"},
		{name: "1.1 has no CR escape", version: V11, command: "SEND", line: `a:\r`, wantErr: ErrBadEscape},
		{name: "1.1 tab is fatal", version: V11, command: "MESSAGE", line: `a:\t`, wantErr: ErrBadEscape},
		{name: "1.0 has no escapes", version: V10, command: "SEND", line: `a\c:\t\`, wantName: `a\c`, wantValue: `\t\`},
		{name: "1.2 CONNECT is not escaped", version: V12, command: "CONNECT", line: `passcode:p\t\c`, wantName: "passcode", wantValue: `p\t\c`},
		{name: "1.2 STOMP is not escaped", version: V12, command: "STOMP", line: `login:a\b`, wantName: "login", wantValue: `a\b`},
		{name: "1.2 CONNECTED is not escaped", version: V12, command: "CONNECTED", line: `server:x\`, wantName: "server", wantValue: `x\`},
		{name: "1.1 CONNECT is not escaped", version: V11, command: "CONNECT", line: `host:a\nb`, wantName: "host", wantValue: `a\nb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			input := tt.command + "\n" + tt.line + "\n\n\x00"
			got, _ := decodeChunks(Limits{}, tt.version, []byte(input))
			if got.err != tt.wantErr {
				t.Fatalf("decoding %q: got err %v, want %v", input, got.err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if len(got.frames) != 1 || len(got.frames[0].Headers) != 1 {
				t.Fatalf("decoding %q: got %v, want one frame with one header", input, got)
			}
			h := got.frames[0].Headers[0]
			if h.Name != tt.wantName || h.Value != tt.wantValue {
				t.Errorf("decoding %q: got %q:%q, want %q:%q", input, h.Name, h.Value, tt.wantName, tt.wantValue)
			}
		})
	}
}

func TestDecodeRepeatedHeaderFirstWins(t *testing.T) {
	t.Parallel()
	got, _ := decodeChunks(Limits{}, V12, []byte("SEND\ndestination:/a\ndestination:/b\ncontent-length:1\ncontent-length:2\n\nx\x00"))
	if got.err != nil || len(got.frames) != 1 {
		t.Fatalf("got %v, want one frame", got)
	}
	f := got.frames[0]
	if d := f.Get("destination"); d != "/a" {
		t.Errorf(`Get("destination") = %q, want "/a"`, d)
	}
	if string(f.Body) != "x" {
		t.Errorf("Body = %q, want %q (first content-length counts)", f.Body, "x")
	}
}

func TestDecodeSetVersion(t *testing.T) {
	t.Parallel()
	d := NewDecoder(Limits{})
	d.Feed([]byte("CONNECT\naccept-version:1.0\n\n\x00SEND\npath:C:\\t\n\n\x00"))
	f, err := d.Next()
	if err != nil || f == nil || f.Command != "CONNECT" {
		t.Fatalf("Next() = %v, %v, want CONNECT", f, err)
	}
	v, _ := Negotiate(f.Get("accept-version"))
	d.SetVersion(v)
	f, err = d.Next()
	if err != nil || f == nil {
		t.Fatalf("Next() = %v, %v, want SEND", f, err)
	}
	if got := f.Get("path"); got != `C:\t` {
		t.Errorf(`Get("path") = %q, want %q`, got, `C:\t`)
	}
	if got := d.Version(); got != V10 {
		t.Errorf("Version() = %v, want %v", got, V10)
	}
}

// TestDecodePartialFrameBounded feeds a frame that never ends, in messages
// of 1000 bytes, and checks that the Decoder gives up as soon as the frame
// passes the limit and never holds more than the limit meanwhile.
func TestDecodePartialFrameBounded(t *testing.T) {
	t.Parallel()
	const limit = 4096
	d := NewDecoder(Limits{MaxFrameSize: limit})
	d.Feed([]byte("SEND\ndestination:/q\n\n"))
	sent := len("SEND\ndestination:/q\n\n")
	chunk := bytes.Repeat([]byte("x"), 1000)
	for i := 0; ; i++ {
		f, err := d.Next()
		if f != nil {
			t.Fatalf("Next() returned a frame from input without NUL")
		}
		if err != nil {
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("Next() error = %v, want ErrFrameTooLarge", err)
			}
			if sent <= limit || sent > limit+len(chunk) {
				t.Fatalf("rejected after %d bytes, want after the message that passed %d", sent, limit)
			}
			return
		}
		if b := d.Buffered(); b > limit {
			t.Fatalf("Buffered() = %d after %d bytes, want <= %d", b, sent, limit)
		}
		d.Feed(chunk)
		sent += len(chunk)
		if i > 10 {
			t.Fatalf("still no error after %d bytes", sent)
		}
	}
}

func TestDecodeLongLineRejectedEarly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prefix string
	}{
		{name: "command line", prefix: ""},
		{name: "header line", prefix: "SEND\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := NewDecoder(Limits{MaxHeaderLine: 100})
			d.Feed([]byte(tt.prefix + strings.Repeat("A", 102)))
			_, err := d.Next()
			if !errors.Is(err, ErrHeaderLineTooLong) {
				t.Fatalf("Next() error = %v, want ErrHeaderLineTooLong before the line ends", err)
			}
		})
	}
}

func TestDecodeTooManyHeaders(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("SEND\n")
	for i := range DefaultMaxHeaders + 1 {
		fmt.Fprintf(&b, "h%d:v\n", i)
	}
	b.WriteString("\n\x00")
	got, _ := decodeChunks(Limits{}, V12, []byte(b.String()))
	if got.err != ErrTooManyHeaders {
		t.Fatalf("got %v, want ErrTooManyHeaders", got)
	}
}

// TestDecodeHugeContentLengthAllocs shows that a 56-byte frame claiming a
// 1 GB body is rejected without allocating anything near that size, the
// allocation go-stomp's frame.Reader makes for the same input.
func TestDecodeHugeContentLengthAllocs(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "huge_content_length.stomp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(input) != 56 {
		t.Fatalf("len(input) = %d, want 56", len(input))
	}
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := NewDecoder(Limits{})
			d.Feed(input)
			if _, err := d.Next(); !errors.Is(err, ErrFrameTooLarge) {
				b.Fatalf("Next() error = %v, want ErrFrameTooLarge", err)
			}
		}
	})
	if got := res.AllocedBytesPerOp(); got >= 64<<10 {
		t.Errorf("decoding allocated %d bytes per frame, want < %d", got, 64<<10)
	}
	t.Logf("rejected with %d allocs, %d bytes per frame", res.AllocsPerOp(), res.AllocedBytesPerOp())
}

func TestDecodeErrorIsSticky(t *testing.T) {
	t.Parallel()
	d := NewDecoder(Limits{})
	d.Feed([]byte("bad\n\n\x00"))
	_, err1 := d.Next()
	pe, ok := AsProtocolError(err1)
	if !ok || !errors.Is(err1, ErrMalformed) {
		t.Fatalf("Next() error = %v, want a *ProtocolError wrapping ErrMalformed", err1)
	}
	if pe.Message != "malformed frame" || pe.Detail == "" {
		t.Errorf("ProtocolError = %+v, want Message %q and a Detail", pe, "malformed frame")
	}
	d.Feed([]byte("SEND\n\n\x00"))
	f, err2 := d.Next()
	if f != nil || err2 != err1 {
		t.Errorf("Next() after error = %v, %v, want nil, %v", f, err2, err1)
	}
}

func TestDecodeFeedWithoutDrain(t *testing.T) {
	t.Parallel()
	d := NewDecoder(Limits{})
	d.Feed([]byte("ACK\nid:1\n\n\x00ACK\nid:2\n\n\x00AC"))
	if f, err := d.Next(); err != nil || f == nil || f.Get("id") != "1" {
		t.Fatalf("Next() = %v, %v, want ACK id:1", f, err)
	}
	d.Feed([]byte("K\nid:3\n\n\x00"))
	for _, want := range []string{"2", "3"} {
		f, err := d.Next()
		if err != nil || f == nil || f.Get("id") != want {
			t.Fatalf("Next() = %v, %v, want ACK id:%s", f, err, want)
		}
	}
	if f, err := d.Next(); f != nil || err != nil {
		t.Fatalf("Next() = %v, %v, want nil, nil", f, err)
	}
}

func TestDecodeBodyCapacity(t *testing.T) {
	t.Parallel()
	msg := []byte("SEND\n\nab\x00SEND\n\ncd\x00")
	d := NewDecoder(Limits{})
	d.Feed(msg)
	f, err := d.Next()
	if err != nil || f == nil {
		t.Fatalf("Next() = %v, %v", f, err)
	}
	_ = append(f.Body, 'X') // must not overwrite the next frame
	f, err = d.Next()
	if err != nil || f == nil || string(f.Body) != "cd" {
		t.Fatalf("Next() = %v, %v, want body cd", f, err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	msg := send100()
	d := NewDecoder(Limits{})
	allocs := testing.AllocsPerRun(100, func() {
		d.Feed(msg)
		if f, err := d.Next(); f == nil || err != nil {
			t.Fatalf("Next() = %v, %v", f, err)
		}
		if f, err := d.Next(); f != nil || err != nil {
			t.Fatalf("Next() = %v, %v, want nil, nil", f, err)
		}
	})
	if allocs > 1 {
		t.Errorf("decoding a SEND allocated %v times, want <= 1", allocs)
	}
}

func TestGoldenFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		version Version
		frames  int
	}{
		{"stompjs_connect.stomp", V12, 1},
		{"send_nul_body.stomp", V12, 1},
		{"heartbeats.stomp", V12, 1},
		{"v10_colons.stomp", V10, 1},
		{"crlf.stomp", V12, 1},
		{"subscribe.stomp", V12, 1},
		{"escaped.stomp", V12, 1},
		{"multi.stomp", V12, 5},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			input, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := decodeChunks(Limits{}, tt.version, input)
			if got.err != nil || len(got.frames) != tt.frames {
				t.Fatalf("got %v, want %d frames", got, tt.frames)
			}
			checkSplits(t, Limits{}, tt.version, input, got)
		})
	}
}

func TestDecodeKnownCommands(t *testing.T) {
	t.Parallel()
	commands := []string{
		CommandConnect, CommandStomp, CommandConnected, CommandSend, CommandSubscribe,
		CommandUnsubscribe, CommandAck, CommandNack, CommandBegin, CommandCommit,
		CommandAbort, CommandDisconnect, CommandMessage, CommandReceipt, CommandError,
	}
	for _, cmd := range commands {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			d := NewDecoder(Limits{})
			d.Feed([]byte(cmd + "\n\n\x00"))
			f, err := d.Next()
			if err != nil || f == nil || f.Command != cmd {
				t.Fatalf("Next() = %v, %v, want a %s frame", f, err, cmd)
			}
		})
	}
}
