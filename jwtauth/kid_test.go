package jwtauth

import (
	"crypto"
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestOneKeyPerToken: a token is checked against one key, never against
// each key of its algorithm in turn. Without a kid it is accepted when
// exactly one configured key could verify its alg and refused when
// several could; with several, the kid (a PEM key's thumbprint, a JWK's
// kid) picks the one.
func TestOneKeyPerToken(t *testing.T) {
	testKeys(t)
	claims := validClaims("alice", nil)
	rsaTP, err := Thumbprint(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsa2TP, _ := Thumbprint(&rsaKey2.PublicKey)
	ecTP, _ := Thumbprint(&ecKey.PublicKey)
	js := newJWKSServer(t, rsaJWK("r1", &rsaKey.PublicKey), rsaJWK("r2", &rsaKey2.PublicKey), ecJWK("e1", &ecKey.PublicKey))
	jwks := newJWKS(t, JWKSConfig{URL: js.URL})

	static := func(keys ...crypto.PublicKey) KeySource {
		s, err := NewStaticKeys(keys...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rs256 := func(k any, kid string) string { return signWith(t, jwt.SigningMethodRS256, k, kid, claims) }
	es256 := func(k any, kid string) string { return signWith(t, jwt.SigningMethodES256, k, kid, claims) }
	for _, tc := range []struct {
		name    string
		keys    KeySource
		token   string
		wantErr error // nil: accepted
	}{
		{"one RSA key, no kid", static(&rsaKey.PublicKey), rs256(rsaKey, ""), nil},
		{"one RSA key and one EC key, RS256 without kid", static(&rsaKey.PublicKey, &ecKey.PublicKey), rs256(rsaKey, ""), nil},
		{"one RSA key and one EC key, ES256 without kid", static(&rsaKey.PublicKey, &ecKey.PublicKey), es256(ecKey, ""), nil},
		{"one RSA key, a kid it does not know", static(&rsaKey.PublicKey), rs256(rsaKey, "key-2024"), nil},
		{"one RSA key, signed by another", static(&rsaKey.PublicKey), rs256(rsaKey2, ""), jwt.ErrTokenSignatureInvalid},
		{"two RSA keys, no kid", static(&rsaKey.PublicKey, &rsaKey2.PublicKey), rs256(rsaKey, ""), ErrAmbiguousKey},
		{"two RSA keys, a kid naming neither", static(&rsaKey.PublicKey, &rsaKey2.PublicKey), rs256(rsaKey, "key-2024"), ErrAmbiguousKey},
		{"two RSA keys, the first one's thumbprint", static(&rsaKey.PublicKey, &rsaKey2.PublicKey), rs256(rsaKey, rsaTP), nil},
		{"two RSA keys, the second one's thumbprint", static(&rsaKey.PublicKey, &rsaKey2.PublicKey), rs256(rsaKey2, rsa2TP), nil},
		{"two RSA keys, the other one's thumbprint", static(&rsaKey.PublicKey, &rsaKey2.PublicKey), rs256(rsaKey, rsa2TP), jwt.ErrTokenSignatureInvalid},
		{"two RSA keys, ES256 by the EC thumbprint", static(&rsaKey.PublicKey, &rsaKey2.PublicKey, &ecKey.PublicKey), es256(ecKey, ecTP), nil},
		{"JWKS of two RSA keys, no kid", jwks, rs256(rsaKey, ""), ErrAmbiguousKey},
		{"JWKS of two RSA keys, kid r2", jwks, rs256(rsaKey2, "r2"), nil},
		{"JWKS of one EC key, no kid", jwks, es256(ecKey, ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Config{Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(tc.token, t0)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("Verify = %v, want it accepted", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("Verify = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestAmbiguousKeyMessage: the client reads why its token was refused.
func TestAmbiguousKeyMessage(t *testing.T) {
	testKeys(t)
	keys, err := NewStaticKeys(&rsaKey.PublicKey, &rsaKey2.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(signWith(t, jwt.SigningMethodRS256, rsaKey, "", validClaims("alice", nil)), t0)
	const want = "token is unverifiable: error while executing keyfunc: jwtauth: several keys could verify the token and its kid picks none of them: the token has no kid and 2 RS256 keys are configured"
	if err == nil || err.Error() != want {
		t.Errorf("Verify = %v, want %q", err, want)
	}
}

func TestThumbprintRefusesBadKeys(t *testing.T) {
	testKeys(t)
	for _, k := range []crypto.PublicKey{&rsaShort.PublicKey, &ecBad.PublicKey, edPub} {
		if tp, err := Thumbprint(k); err == nil {
			t.Errorf("Thumbprint(%T) = %q, want an error", k, tp)
		}
	}
}
