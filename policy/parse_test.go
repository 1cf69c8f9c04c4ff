package policy

import (
	"errors"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Policy
		wantErr string
	}{
		{
			name: "defaults filled",
			in: `
zones:
  - name: chat
    rate: 30r/m
    routes:
      - path: /chat/{id}
        upstream: api
`,
			want: Policy{Zones: []Zone{{Name: "chat", Key: "client_ip", Rate: 500, Size: "10m",
				Routes: []Route{{Path: "/chat/{id}", Upstream: "api"}}}}},
		},
		{
			name: "routes at top level",
			in: `
routes: &r [{method: POST, path: /a, upstream: api}]
`,
			wantErr: `policy: line 2: unknown field "routes"`,
		},
		{
			name: "alias",
			in: `
zones:
  - &z {name: a, rate: 1r/s, burst: 2, routes: [{path: /a, upstream: api}]}
`,
			want: Policy{Zones: []Zone{{Name: "a", Key: "client_ip", Rate: 1000, Burst: 2, Size: "10m",
				Routes: []Route{{Path: "/a", Upstream: "api"}}}}},
		},
		{name: "empty", in: "", wantErr: `policy: no zones`},
		{name: "comments only", in: "# nothing\n", wantErr: `policy: no zones`},
		{name: "null zones", in: "zones:\n", wantErr: `policy: no zones`},
		{name: "empty zones", in: "zones: []\n", wantErr: `policy: no zones`},
		{name: "not a mapping", in: "- a\n", wantErr: `policy: line 1: expected a mapping with fields [zones destinations]`},
		{name: "zones not a list", in: "zones: 3\n", wantErr: `policy: line 1: zones must be a list`},
		{name: "syntax error", in: "zones: [\n", wantErr: `policy: yaml: line 1: did not find expected node content`},
		{
			name:    "unknown top field",
			in:      "zone:\n  - name: a\n",
			wantErr: `policy: line 1: unknown field "zone"`,
		},
		{
			name: "unknown zone field",
			in: `zones:
  - name: ws_handshake
    rate: 3r/s
    brust: 5
`,
			wantErr: `policy: line 4: zone "ws_handshake": unknown field "brust"`,
		},
		{
			name: "unknown field before name",
			in: `zones:
  - brust: 5
    name: ws_handshake
`,
			wantErr: `policy: line 2: zone "ws_handshake": unknown field "brust"`,
		},
		{
			name: "unnamed zone",
			in: `zones:
  - rate: 3r/s
    colour: red
`,
			wantErr: `policy: line 3: zone 1: unknown field "colour"`,
		},
		{
			name: "repeated field",
			in: `zones:
  - name: a
    rate: 3r/s
    rate: 4r/s
`,
			wantErr: `policy: line 4: zone "a": field "rate" is repeated`,
		},
		{
			name: "bad rate",
			in: `zones:
  - name: a
    rate: 3r/h
`,
			wantErr: `policy: line 3: zone "a": rate "3r/h" is not <n>r/s or <n>r/m`,
		},
		{
			name: "number rate",
			in: `zones:
  - name: a
    rate: 3
`,
			wantErr: `policy: line 3: zone "a": rate "3" is not <n>r/s or <n>r/m`,
		},
		{
			name: "burst not a number",
			in: `zones:
  - name: a
    burst: five
`,
			wantErr: `policy: line 3: zone "a": burst "five" is not a whole number`,
		},
		{
			name: "burst fraction",
			in: `zones:
  - name: a
    burst: 1.5
`,
			wantErr: `policy: line 3: zone "a": burst "1.5" is not a whole number`,
		},
		{
			name: "name is a list",
			in: `zones:
  - name: [a]
`,
			wantErr: `policy: line 2: zone 1: name must be a single value`,
		},
		{
			name: "routes not a list",
			in: `zones:
  - name: a
    routes: /a
`,
			wantErr: `policy: line 3: zone "a": routes must be a list`,
		},
		{
			name: "unknown route field",
			in: `zones:
  - name: a
    rate: 1r/s
    routes:
      - path: /a
        verb: POST
`,
			wantErr: `policy: line 6: zone "a": route 1: unknown field "verb"`,
		},
		{
			name: "negative burst reaches Validate",
			in: `zones:
  - name: ws_handshake
    rate: 3r/s
    burst: -1
    routes:
      - {method: GET, path: /ws, upstream: ws}
`,
			wantErr: `policy: zone "ws_handshake": burst -1 is negative`,
		},
		{
			name: "missing rate reaches Validate",
			in: `zones:
  - name: a
    routes:
      - {path: /a, upstream: api}
`,
			wantErr: `policy: zone "a": rate 0r/s is not positive`,
		},
		{
			name: "max connections",
			in: `zones:
  - {name: ws, rate: 3r/s, max_connections: 4, routes: [{method: GET, path: /ws, upstream: ws}]}
`,
			want: Policy{Zones: []Zone{{Name: "ws", Key: "client_ip", Rate: 3000, MaxConnections: 4, Size: "10m",
				Routes: []Route{{Method: "GET", Path: "/ws", Upstream: "ws"}}}}},
		},
		{
			name: "max connections not a number",
			in: `zones:
  - {name: ws, rate: 3r/s, max_connections: many, routes: [{method: GET, path: /ws, upstream: ws}]}
`,
			wantErr: `policy: line 2: zone "ws": max_connections "many" is not a whole number`,
		},
		{
			name: "negative max connections reaches Validate",
			in: `zones:
  - {name: ws, rate: 3r/s, max_connections: -2, routes: [{method: GET, path: /ws, upstream: ws}]}
`,
			wantErr: `policy: zone "ws": max_connections -2 is negative`,
		},
		{
			name: "second document",
			in: `zones:
  - {name: a, rate: 1r/s, routes: [{path: /a, upstream: api}]}
---
zones: []
`,
			wantErr: `policy: line 3: a second YAML document; a policy holds one`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Parse error = %v, want %s", err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("Parse error does not match ErrInvalid")
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse error = %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseDefaultYAML parses the embedded file directly, so that a broken
// default.yaml fails here with a message rather than in Default's panic.
func TestParseDefaultYAML(t *testing.T) {
	t.Parallel()
	p, err := Parse(defaultYAML)
	if err != nil {
		t.Fatalf("Parse(default.yaml) = %v, want nil", err)
	}
	if !reflect.DeepEqual(p, documented) {
		t.Fatalf("Parse(default.yaml) = %+v, want %+v", p, documented)
	}
}

var sinkPolicy Policy

// BenchmarkParse measures Parse on default.yaml against its floor, a plain
// yaml.Unmarshal of the same bytes into a yaml.Node with no checks
// (BenchmarkParseYAMLNodePeer).
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse(defaultYAML)
		if err != nil {
			b.Fatal(err)
		}
		sinkPolicy = p
	}
}

// BenchmarkParseYAMLNodePeer is the reference for BenchmarkParse.
func BenchmarkParseYAMLNodePeer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(defaultYAML, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDefault measures Default, which copies the policy parsed once.
func BenchmarkDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkPolicy = Default()
	}
}
