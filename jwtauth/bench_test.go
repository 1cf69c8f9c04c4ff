package jwtauth

import (
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
