package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestCheckEnviron: a WSSERVER_ variable that is no setting of the server
// or of nginx-config stops start-up, named, with the setting it most
// likely meant; settings of either command and other variables pass.
func TestCheckEnviron(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string // substrings of the error; none: no error
	}{
		{"none", nil, nil},
		{"settings of both commands", []string{"WSSERVER_SEND_LIMIT=5", "WSSERVER_NGINX_LISTEN=8080", "WSSERVER_POLICY=/p.yaml"}, nil},
		{"other variables", []string{"HOME=/root", "PATH=/bin", "GOMAXPROCS=2", "XWSSERVER_FOO=1"}, nil},
		{"typo", []string{"WSSERVER_SEND_LIMT=5"}, []string{"WSSERVER_SEND_LIMT is not a setting", "did you mean WSSERVER_SEND_LIMIT?"}},
		{"no near name", []string{"WSSERVER_FOO=1"}, []string{"WSSERVER_FOO is not a setting; wsserver -h lists them"}},
		{"every bad name", []string{"WSSERVER_SEND_LIMT=5", "WSSERVER_ADMN_ADDR=:1"}, []string{"WSSERVER_SEND_LIMT", "WSSERVER_ADMN_ADDR", "did you mean WSSERVER_ADMIN_ADDR?"}},
		{"empty value still named", []string{"WSSERVER_REDIS_ULR="}, []string{"did you mean WSSERVER_REDIS_URL?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEnviron(tt.environ)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("checkEnviron(%q) = %v, want nil", tt.environ, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkEnviron(%q) = nil, want an error", tt.environ)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("checkEnviron(%q) = %q, want it to contain %q", tt.environ, err, w)
				}
			}
			if strings.Contains(err.Error(), "did you mean WSSERVER_DEMO") {
				t.Errorf("checkEnviron(%q) = %q: suggests an unrelated name", tt.environ, err)
			}
		})
	}
}

// TestValueHints: a value a flag cannot parse, on the command line or in
// the environment, says what the value must look like.
func TestValueHints(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		want   string
		wantIn string // the setting named
	}{
		{"duration flag", []string{"-send-window", "5"}, nil, "want a duration with a unit", "-send-window"},
		{"duration env", nil, map[string]string{"WSSERVER_SEND_WINDOW": "5x"}, "want a duration with a unit", "WSSERVER_SEND_WINDOW"},
		{"int flag", []string{"-max-frame-size", "64k"}, nil, "want a whole number", "-max-frame-size"},
		{"int env", nil, map[string]string{"WSSERVER_SEND_LIMIT": "twenty"}, "want a whole number", "WSSERVER_SEND_LIMIT"},
		{"bool env", nil, map[string]string{"WSSERVER_DEMO": "yes please"}, "want true or false", "WSSERVER_DEMO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st settings
			err := st.parse(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err == nil {
				t.Fatalf("parse(%q, %v) = nil, want an error", tt.args, tt.env)
			}
			for _, w := range []string{tt.want, tt.wantIn} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("parse(%q, %v) = %q, want it to contain %q", tt.args, tt.env, err, w)
				}
			}
		})
	}
	// Strings take any value: no hint to give.
	if h := valueHint(&flag.Flag{Value: new(stringValue)}); h != "" {
		t.Errorf("valueHint(string flag) = %q, want none", h)
	}
}

// stringValue is a flag.Value that is no flag.Getter.
type stringValue string

func (s *stringValue) String() string     { return string(*s) }
func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
