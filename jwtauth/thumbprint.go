package jwtauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
)

// Thumbprint returns key's JWK thumbprint (RFC 7638, SHA-256, base64url):
// the kid by which StaticKeys knows a key read from PEM. An issuer that
// signs with one of several PEM keys puts it in the token's kid header. A
// key KeyAlg refuses is an error.
func Thumbprint(key crypto.PublicKey) (string, error) {
	if _, err := KeyAlg(key); err != nil {
		return "", err
	}
	return thumbprint(key), nil
}

// thumbprint is Thumbprint for a key keyAlg accepted. The members are
// the key type's required ones, in lexicographic order, without
// whitespace (RFC 7638 section 3.2); base64url values need no escaping.
func thumbprint(key crypto.PublicKey) string {
	b64 := base64.RawURLEncoding.EncodeToString
	var doc string
	switch k := key.(type) {
	case *rsa.PublicKey:
		doc = `{"e":"` + b64(big.NewInt(int64(k.E)).Bytes()) + `","kty":"RSA","n":"` + b64(k.N.Bytes()) + `"}`
	case *ecdsa.PublicKey:
		// Coordinates are padded to the curve's size (RFC 7518 section
		// 6.2.1.2): 32 bytes on P-256.
		x, y := make([]byte, 32), make([]byte, 32)
		k.X.FillBytes(x)
		k.Y.FillBytes(y)
		doc = `{"crv":"P-256","kty":"EC","x":"` + b64(x) + `","y":"` + b64(y) + `"}`
	}
	sum := sha256.Sum256([]byte(doc))
	return b64(sum[:])
}
