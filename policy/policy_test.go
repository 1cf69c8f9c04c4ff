package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// documented is the default policy as DESIGN.md and Default's doc comment
// state it.
var documented = Policy{Zones: []Zone{
	{
		Name: "ws_handshake", Key: "client_ip", Rate: 3000, Burst: 5, MaxConnections: 100, Size: "10m",
		Routes: []Route{{Method: "GET", Path: "/ws", Upstream: "ws"}},
	},
	{
		Name: "room_create", Key: "client_ip", Rate: 2000, Burst: 4, Size: "10m",
		Routes: []Route{{Method: "POST", Path: "/rooms", Upstream: "api"}},
	},
	{
		Name: "room_join", Key: "client_ip", Rate: 5000, Burst: 10, Size: "10m",
		Routes: []Route{{Method: "POST", Path: "/rooms/{id}/join", Upstream: "api"}},
	},
}}

func TestDefault(t *testing.T) {
	t.Parallel()
	got := Default()
	if !reflect.DeepEqual(got, documented) {
		t.Fatalf("Default() = %+v, want %+v", got, documented)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestDefaultReturnsCopy(t *testing.T) {
	t.Parallel()
	p := Default()
	p.Zones[0].Burst = 99
	p.Zones[0].Routes[0].Path = "/changed"
	if got := Default(); !reflect.DeepEqual(got, documented) {
		t.Fatalf("Default() after modifying an earlier result = %+v, want %+v", got, documented)
	}
}

func TestZone(t *testing.T) {
	t.Parallel()
	p := Default()
	for _, name := range []string{ZoneHandshake, ZoneRoomCreate, ZoneRoomJoin} {
		z, ok := p.Zone(name)
		if !ok || z.Name != name {
			t.Errorf("Zone(%q) = %q, %v, want %q, true", name, z.Name, ok, name)
		}
	}
	if z, ok := p.Zone("nope"); ok {
		t.Errorf("Zone(%q) = %+v, true, want false", "nope", z)
	}
	z, _ := p.Zone(ZoneHandshake)
	z.Routes[0].Path = "/changed"
	if got := p.Zones[0].Routes[0].Path; got != "/ws" {
		t.Errorf("after modifying Zone's routes, policy path = %q, want %q", got, "/ws")
	}
}

func TestRouteString(t *testing.T) {
	t.Parallel()
	if got, want := (Route{Method: "POST", Path: "/rooms"}).String(), "POST /rooms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (Route{Path: "/rooms"}).String(), "/rooms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	// zone returns a valid zone changed by edit.
	zone := func(edit func(z *Zone)) Zone {
		z := Zone{
			Name: "z", Rate: 3000, Burst: 5,
			Routes: []Route{{Method: "POST", Path: "/rooms/{id}/join", Upstream: "api"}},
		}
		edit(&z)
		return z
	}
	keep := func(*Zone) {}
	tests := []struct {
		name    string
		policy  Policy
		wantErr string // "" means valid
	}{
		{name: "default", policy: Default()},
		{name: "defaults left empty", policy: Policy{Zones: []Zone{zone(keep)}}},
		{name: "any method", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Method = "" })}}},
		{name: "root path", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/" })}}},
		{name: "trailing slash", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/rooms/" })}}},
		{name: "burst zero", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Burst = 0 })}}},
		{name: "size in k", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Size = "32k" })}}},
		{name: "per minute rate", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Rate = 500 })}}},
		{name: "max connections", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.MaxConnections = MaxMaxConnections })}}},
		{
			name:    "negative max connections",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.MaxConnections = -1 })}},
			wantErr: `policy: zone "z": max_connections -1 is negative`,
		},
		{
			name:    "huge max connections",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.MaxConnections = MaxMaxConnections + 1 })}},
			wantErr: `policy: zone "z": max_connections 65536 is above nginx's maximum 65535`,
		},
		{
			name: "same path two zones same upstream",
			policy: Policy{Zones: []Zone{
				zone(keep),
				zone(func(z *Zone) { z.Name = "other"; z.Routes[0].Path = "/rooms/{room}/join" }),
			}},
		},
		{name: "no zones", policy: Policy{}, wantErr: `policy: no zones`},
		{name: "no name", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Name = "" })}}, wantErr: `policy: zone with no name`},
		{
			name:    "bad name",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Name = "Room-Join" })}},
			wantErr: `policy: zone "Room-Join": name must be lower-case letters, digits and _, starting with a letter`,
		},
		{
			name:    "duplicate name",
			policy:  Policy{Zones: []Zone{zone(keep), zone(keep)}},
			wantErr: `policy: zone "z" is defined twice`,
		},
		{name: "key", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Key = "user" })}}, wantErr: `policy: zone "z": key "user" is not client_ip`},
		{name: "zero rate", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Rate = 0 })}}, wantErr: `policy: zone "z": rate 0r/s is not positive`},
		{name: "negative rate", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Rate = -1000 })}}, wantErr: `policy: zone "z": rate -1r/s is not positive`},
		{name: "huge rate", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Rate = MaxRate + 1000 })}}, wantErr: `policy: zone "z": rate 1000001r/s is above the maximum 1000000r/s`},
		{
			name:    "inexact rate",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Rate = 16 })}},
			wantErr: `policy: zone "z": rate 0.016r/s cannot be written in nginx syntax (whole r/s or r/m)`,
		},
		{name: "negative burst", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Burst = -1 })}}, wantErr: `policy: zone "z": burst -1 is negative`},
		{name: "huge burst", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Burst = MaxBurst + 1 })}}, wantErr: `policy: zone "z": burst 1000001 is above the maximum 1000000`},
		{name: "bad size", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Size = "10 MB" })}}, wantErr: `policy: zone "z": size "10 MB" is not an nginx size (<n>, <n>k or <n>m)`},
		{name: "small size", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Size = "16k" })}}, wantErr: `policy: zone "z": size "16k" is below nginx's minimum of 32k`},
		{name: "huge size", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Size = "99999999999m" })}}, wantErr: `policy: zone "z": size "99999999999m" is too large`},
		{name: "no routes", policy: Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes = nil })}}, wantErr: `policy: zone "z": no routes`},
		{
			name:    "lower-case method",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Method = "post" })}},
			wantErr: `policy: zone "z": route "post /rooms/{id}/join": method "post" is not an upper-case HTTP method`,
		},
		{
			name:    "relative path",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "rooms" })}},
			wantErr: `policy: zone "z": route "POST rooms": path "rooms" does not start with /`,
		},
		{
			name:    "empty segment",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/rooms//join" })}},
			wantErr: `policy: zone "z": route "POST /rooms//join": path "/rooms//join" has an empty segment`,
		},
		{
			name:    "dot segment",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/rooms/../join" })}},
			wantErr: `policy: zone "z": route "POST /rooms/../join": path "/rooms/../join" has a dot segment "..", which nginx removes before matching`,
		},
		{
			name:    "partial parameter",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/rooms/x{id}" })}},
			wantErr: `policy: zone "z": route "POST /rooms/x{id}": path "/rooms/x{id}": segment "x{id}" is neither a {name} parameter nor letters, digits and -._~`,
		},
		{
			name:    "config syntax in path",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Path = "/a;b" })}},
			wantErr: `policy: zone "z": route "POST /a;b": path "/a;b": segment "a;b" is neither a {name} parameter nor letters, digits and -._~`,
		},
		{
			name:    "bad upstream",
			policy:  Policy{Zones: []Zone{zone(func(z *Zone) { z.Routes[0].Upstream = "db" })}},
			wantErr: `policy: zone "z": route "POST /rooms/{id}/join": upstream "db" is not ws or api`,
		},
		{
			name: "mixed methods",
			policy: Policy{Zones: []Zone{zone(func(z *Zone) {
				z.Routes = append(z.Routes, Route{Method: "GET", Path: "/rooms", Upstream: "api"})
			})}},
			wantErr: `policy: zone "z": route "GET /rooms": method "GET" differs from method "POST" of route "POST /rooms/{id}/join"; a zone limits one method (or all)`,
		},
		{
			name: "repeated route",
			policy: Policy{Zones: []Zone{zone(func(z *Zone) {
				z.Routes = append(z.Routes, Route{Method: "POST", Path: "/rooms/{x}/join", Upstream: "api"})
			})}},
			wantErr: `policy: zone "z": route "POST /rooms/{x}/join" is listed twice`,
		},
		{
			name: "one path two upstreams",
			policy: Policy{Zones: []Zone{
				zone(keep),
				zone(func(z *Zone) { z.Name = "other"; z.Routes[0].Upstream = "ws" }),
			}},
			wantErr: `policy: zone "other": route "POST /rooms/{id}/join": upstream ws differs from upstream api of the same path in zone "z"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.policy.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Validate() = %v, want %s", err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Validate() error does not match ErrInvalid")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("empty path", func(t *testing.T) {
		p, err := Load("")
		if err != nil || !reflect.DeepEqual(p, documented) {
			t.Fatalf(`Load("") = %+v, %v, want the default policy`, p, err)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := write("one.yaml", "zones:\n  - {name: api, rate: 10r/s, routes: [{path: /api, upstream: api}]}\n")
		p, err := Load(path)
		if err != nil {
			t.Fatalf("Load = %v, want nil", err)
		}
		want := Policy{Zones: []Zone{{Name: "api", Key: KeyClientIP, Rate: 10000, Size: DefaultSize,
			Routes: []Route{{Path: "/api", Upstream: "api"}}}}}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("Load = %+v, want %+v", p, want)
		}
	})
	t.Run("invalid file names the path", func(t *testing.T) {
		path := write("bad.yaml", "zones:\n  - {name: api, rate: 10r/s, burst: -2, routes: [{path: /api, upstream: api}]}\n")
		_, err := Load(path)
		want := `policy: ` + path + `: zone "api": burst -2 is negative`
		if err == nil || err.Error() != want {
			t.Fatalf("Load = %v, want %s", err, want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Load error does not match ErrInvalid")
		}
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "missing.yaml")
		_, err := Load(path)
		if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), path) {
			t.Fatalf("Load = %v, want a not-exist error naming %s", err, path)
		}
		if errors.Is(err, ErrInvalid) {
			t.Errorf("Load error for a missing file matches ErrInvalid, want it not to")
		}
	})
}
