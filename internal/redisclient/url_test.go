package redisclient

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNew(t *testing.T) {
	type want struct {
		kind     string // single, failover, cluster
		addrs    []string
		db       int
		master   string
		password string
		tls      bool
		read     time.Duration // ReadTimeout; the failover kind is not checked
	}
	tests := []struct {
		url  string
		want want
	}{
		{url: "redis://127.0.0.1:6380/2", want: want{kind: "single", addrs: []string{"127.0.0.1:6380"}, db: 2, read: DefaultReadTimeout}},
		{url: "redis://:secret@redis.internal", want: want{kind: "single", addrs: []string{"redis.internal:6379"}, password: "secret", read: DefaultReadTimeout}},
		{url: "rediss://redis.internal:6380/0?dial_timeout=1s&read_timeout=2s", want: want{kind: "single", addrs: []string{"redis.internal:6380"}, tls: true, read: 2 * time.Second}},
		{url: "unix:///run/redis.sock?db=3", want: want{kind: "single", addrs: []string{"/run/redis.sock"}, db: 3, read: DefaultReadTimeout}},
		{
			url:  "redis+sentinel://:pw@s1:26379,s2:26379,s3/mymaster/1",
			want: want{kind: "failover", addrs: []string{"s1:26379", "s2:26379", "s3:26379"}, master: "mymaster", db: 1, password: "pw"},
		},
		{
			url:  "rediss+sentinel://s1:26379/mymaster?password=masterpw",
			want: want{kind: "failover", addrs: []string{"s1:26379"}, master: "mymaster", password: "masterpw", tls: true},
		},
		{
			url:  "redis+cluster://:pw@n1:7000,n2:7001,n3:7002?read_only=true",
			want: want{kind: "cluster", addrs: []string{"n1:7000", "n2:7001", "n3:7002"}, password: "pw", read: DefaultReadTimeout},
		},
		{url: "rediss+cluster://n1:7000", want: want{kind: "cluster", addrs: []string{"n1:7000"}, tls: true, read: DefaultReadTimeout}},
		// -1 is go-redis' "no timeout", which it stores as 0: kept, not
		// replaced by the default.
		{url: "redis+cluster://n1:7000?read_timeout=-1", want: want{kind: "cluster", addrs: []string{"n1:7000"}, read: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := New(tt.url)
			if err != nil {
				t.Fatalf("New(%q) error = %v", tt.url, err)
			}
			defer c.Close()
			var got want
			var ctxTimeout bool
			switch c := c.(type) {
			case *redis.Client:
				o := c.Options()
				// A Sentinel-backed client is a *redis.Client too; its
				// options hold the master name in Addr.
				got = want{kind: "single", addrs: []string{o.Addr}, db: o.DB, password: o.Password, tls: o.TLSConfig != nil, read: o.ReadTimeout}
				ctxTimeout = o.ContextTimeoutEnabled
				if o.DialTimeout == 0 || o.WriteTimeout == 0 {
					t.Errorf("DialTimeout %v, WriteTimeout %v: want them set", o.DialTimeout, o.WriteTimeout)
				}
			case *redis.ClusterClient:
				o := c.Options()
				got = want{kind: "cluster", addrs: o.Addrs, password: o.Password, tls: o.TLSConfig != nil, read: o.ReadTimeout}
				ctxTimeout = o.ContextTimeoutEnabled
				if o.DialTimeout != DefaultDialTimeout || o.WriteTimeout == 0 {
					t.Errorf("DialTimeout %v, WriteTimeout %v: want %v and set", o.DialTimeout, o.WriteTimeout, DefaultDialTimeout)
				}
			default:
				t.Fatalf("client type %T", c)
			}
			if !ctxTimeout {
				t.Error("ContextTimeoutEnabled = false, want true")
			}
			if tt.want.kind == "failover" {
				// Check what go-redis was given, through the same parser.
				opt, err := parseSentinelURL(strings.TrimSuffix(strings.SplitN(tt.url, "://", 2)[0], "+sentinel"), strings.SplitN(tt.url, "://", 2)[1])
				if err != nil {
					t.Fatal(err)
				}
				got = want{kind: "failover", addrs: opt.SentinelAddrs, master: opt.MasterName, db: opt.DB, password: opt.Password, tls: opt.TLSConfig != nil}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("New(%q) = %+v, want %+v", tt.url, got, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string
	}{
		{url: "", wantErr: "redisclient: Redis URL is empty"},
		{url: "localhost:6379", wantErr: "redisclient: Redis URL localhost:6379: missing scheme"},
		{url: "http://user:hunter2@h/0", wantErr: "redisclient: Redis URL http://xxxxx@h/0: unknown scheme http"},
		{url: "redis://:hunter2@h:notaport/0", wantErr: "redisclient: Redis URL redis://xxxxx@h:notaport/0: invalid port"},
		{url: "redis+sentinel://:hunter2@s1:26379", wantErr: "redisclient: Redis URL redis+sentinel://xxxxx@s1:26379: path must be /master or /master/db"},
		{url: "redis+sentinel://s1/m/x", wantErr: `redisclient: Redis URL redis+sentinel://s1/m/x: redis: invalid database number: "x"`},
		{url: "redis+cluster://n1:7000/3", wantErr: "redisclient: Redis URL redis+cluster://n1:7000/3: cluster URLs take no path"},
		{url: "redis+cluster://", wantErr: "redisclient: Redis URL redis+cluster://: no host"},
		{url: "redis://h/0?bogus=1", wantErr: "redisclient: Redis URL redis://h/0?bogus=1: redis: unexpected option: bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := New(tt.url)
			if err == nil {
				c.Close()
				t.Fatalf("New(%q) error = nil, want %q", tt.url, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("New(%q) error = %q, want prefix %q", tt.url, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
			if !errors.Is(err, ErrInvalidURL) {
				t.Errorf("errors.Is(%v, ErrInvalidURL) = false, want true", err)
			}
		})
	}
}
