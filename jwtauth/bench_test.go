package jwtauth

import (
	"crypto"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
)

// BenchmarkPrincipalConnect measures one CONNECT's token check by
// algorithm, the cost a handshake storm puts on the readers: HS256 is the
// peer the public-key algorithms are compared with. A refresh costs the
// same check.
func BenchmarkPrincipalConnect(b *testing.B) {
	testKeys(b)
	claims := jwt.MapClaims{"sub": "alice", "exp": t0.Add(time.Hour).Unix()}
	keys, err := NewStaticKeys(&rsaKey.PublicKey, &ecKey.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		cfg   stageConfig
		token string
	}{
		{"HS256", stageConfig{JWTSecret: testSecret}, signWith(b, jwt.SigningMethodHS256, testSecret, "", claims)},
		{"RS256", stageConfig{Keys: keys}, signWith(b, jwt.SigningMethodRS256, rsaKey, "", claims)},
		{"ES256", stageConfig{Keys: keys}, signWith(b, jwt.SigningMethodES256, ecKey, "", claims)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPrincipalStage(b, bc.cfg)
			f := frame("CONNECT", "passcode", bc.token)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s := interceptor.Session{ID: "1"}
					if r := p.Handle(&s, f, t0); r.Outcome != interceptor.Pass {
						b.Fatalf("Handle = %+v", r)
					}
				}
			})
		})
	}
}

// BenchmarkManyKeys measures a token against a PEM set of 8 RSA keys: one
// whose kid is its key's thumbprint costs one signature check; one
// without a kid is refused before any (it cost 8 when every key was
// tried).
func BenchmarkManyKeys(b *testing.B) {
	testKeys(b)
	pubs := []crypto.PublicKey{&rsaKey.PublicKey}
	for range 7 {
		pubs = append(pubs, &genRSA(2048).PublicKey)
	}
	keys, err := NewStaticKeys(pubs...)
	if err != nil {
		b.Fatal(err)
	}
	v, err := New(Config{Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	kid, _ := Thumbprint(&rsaKey.PublicKey)
	claims := jwt.MapClaims{"sub": "alice", "exp": t0.Add(time.Hour).Unix()}
	for _, bc := range []struct {
		name   string
		token  string
		wantOK bool
	}{
		{"kid", signWith(b, jwt.SigningMethodRS256, rsaKey, kid, claims), true},
		{"no kid", signWith(b, jwt.SigningMethodRS256, rsaKey, "", claims), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(bc.token, t0); (err == nil) != bc.wantOK {
					b.Fatalf("Verify = %v", err)
				}
			}
		})
	}
}
