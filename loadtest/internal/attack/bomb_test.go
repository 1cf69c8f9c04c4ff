package attack

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDeflateBombInflates(t *testing.T) {
	t.Parallel()
	b, n := deflateBomb(bombWireBytes)
	if len(b) < bombWireBytes || len(b) > 2*bombWireBytes {
		t.Fatalf("bomb of %d bytes, want about %d", len(b), bombWireBytes)
	}
	r := flate.NewReader(io.MultiReader(bytes.NewReader(b), bytes.NewReader([]byte{0, 0, 0xff, 0xff})))
	got, err := io.Copy(io.Discard, r)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("inflating the bomb: %v", err)
	}
	if got != int64(n) || n < 1000*len(b) {
		t.Errorf("bomb of %d bytes inflates to %d, reported %d; want over 1,000 times its size", len(b), got, n)
	}
}

// TestDeflateBombAttack sends bombs to a server with compression on and
// off: on, each is closed with 1009 and the target passes; off, the
// target says compression was not negotiated.
func TestDeflateBombAttack(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"compression on", []string{"-compression"}, "pass"},
		{"compression off", nil, "n/a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, pid := startWsserver(t, tt.args...)
			cfg := shortAbuse(url, pid)
			cfg.attacks = attackDeflateBomb
			cfg.Duration = 3 * time.Second
			cfg.bombs = 10
			_, ar := runShort(t, &cfg)
			a := ar.find(attackDeflateBomb)
			if a == nil {
				t.Fatalf("deflate-bomb did not run: %+v", ar.Attacks)
			}
			if f := a.Attacker.Figures; tt.want == "pass" && (f[figBombsSent] != 10 || f[figBombs1009] != 10) {
				t.Errorf("figures %v, want 10 bombs sent and 10 closed with 1009 (%s; notes %v)", f, a.Attacker.Summary, a.Attacker.Notes)
			}
			found := false
			for _, tg := range ar.Targets {
				if strings.HasPrefix(tg.Target, "deflate-bomb") {
					found = true
					if tg.Status != tt.want {
						t.Errorf("%s = %s (%s), want %s", tg.Target, tg.Status, tg.Detail, tt.want)
					}
				}
			}
			if !found {
				t.Error("no deflate-bomb target")
			}
		})
	}
}
