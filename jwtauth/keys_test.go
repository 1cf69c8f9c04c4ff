package jwtauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"
)

// Test keys, generated once per run: RSA generation takes a while under
// the race detector.
var (
	keysOnce             sync.Once
	rsaKey, rsaKey2      *rsa.PrivateKey
	rsaShort             *rsa.PrivateKey
	ecKey, ecKey2, ecBad *ecdsa.PrivateKey
	edPub                ed25519.PublicKey
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		rsaKey, rsaKey2 = genRSA(2048), genRSA(2048)
		rsaShort = genRSA(1024) // crypto/rsa generates nothing shorter
		ecKey, ecKey2, ecBad = genEC(elliptic.P256()), genEC(elliptic.P256()), genEC(elliptic.P384())
		var err error
		if edPub, _, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

func genRSA(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

func genEC(c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// pemBlock encodes der as one PEM block of type typ.
func pemBlock(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// pkixPEM is pub as a "PUBLIC KEY" PEM block.
func pkixPEM(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("MarshalPKIXPublicKey(%T): %v", pub, err)
	}
	return pemBlock("PUBLIC KEY", der)
}

// certPEM is a self-signed certificate for key as a "CERTIFICATE" block.
func certPEM(t *testing.T, key crypto.Signer) string {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stompgate test issuer"},
		NotBefore:    t0.Add(-time.Hour),
		NotAfter:     t0.Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("CreateCertificate: %v", err)
	}
	return pemBlock("CERTIFICATE", der)
}

func TestParsePEMKeys(t *testing.T) {
	testKeys(t)
	t.Parallel()
	tests := []struct {
		name    string
		pem     string
		wantRS  int
		wantES  int
		wantErr string
	}{
		{name: "RSA PKIX", pem: pkixPEM(t, &rsaKey.PublicKey), wantRS: 1},
		{name: "RSA PKCS1", pem: pemBlock("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)), wantRS: 1},
		{name: "EC P-256", pem: pkixPEM(t, &ecKey.PublicKey), wantES: 1},
		{name: "RSA certificate", pem: certPEM(t, rsaKey), wantRS: 1},
		{name: "EC certificate", pem: certPEM(t, ecKey), wantES: 1},
		{name: "two keys and text around them", pem: "current:\n" + pkixPEM(t, &rsaKey.PublicKey) + "next:\n" + pkixPEM(t, &ecKey.PublicKey), wantRS: 1, wantES: 1},
		{name: "empty", pem: "", wantErr: ErrNoKeys.Error()},
		{name: "not PEM", pem: "ssh-rsa AAAAB3NzaC1yc2E...", wantErr: ErrNoKeys.Error()},
		{name: "private key", pem: pemBlock("PRIVATE KEY", []byte{1, 2, 3}), wantErr: `PEM block 1: type "PRIVATE KEY"`},
		{name: "private key after a good one", pem: pkixPEM(t, &ecKey.PublicKey) + pemBlock("EC PRIVATE KEY", []byte{1}), wantErr: "PEM block 2"},
		{name: "RSA 1024", pem: pkixPEM(t, &rsaShort.PublicKey), wantErr: "1024 bits is shorter than 2048"},
		{name: "EC P-384", pem: pkixPEM(t, &ecBad.PublicKey), wantErr: "P-384"},
		{name: "Ed25519", pem: pkixPEM(t, edPub), wantErr: "unsupported public key type"},
		{name: "corrupt DER", pem: pemBlock("PUBLIC KEY", []byte("nonsense")), wantErr: "PEM block 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys, err := ParsePEMKeys([]byte(tt.pem))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "jwtauth: ") {
					t.Fatalf("ParsePEMKeys = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePEMKeys: %v", err)
			}
			for alg, want := range map[string]int{AlgRS256: tt.wantRS, AlgES256: tt.wantES, AlgHS256: 0} {
				got, err := keys.PublicKeys(alg, "any-kid")
				if len(got) != want {
					t.Errorf("PublicKeys(%s) = %d keys, want %d", alg, len(got), want)
				}
				if want == 0 && !errors.Is(err, ErrUnknownKey) {
					t.Errorf("PublicKeys(%s) error = %v, want ErrUnknownKey", alg, err)
				}
			}
			if got := keys.Len(); got != tt.wantRS+tt.wantES {
				t.Errorf("Len() = %d, want %d", got, tt.wantRS+tt.wantES)
			}
		})
	}
}

func TestKeyAlg(t *testing.T) {
	testKeys(t)
	t.Parallel()
	tests := []struct {
		name string
		key  crypto.PublicKey
		want string // "" for an error
	}{
		{"RSA 2048", &rsaKey.PublicKey, AlgRS256},
		{"EC P-256", &ecKey.PublicKey, AlgES256},
		{"RSA 1024", &rsaShort.PublicKey, ""},
		{"EC P-384", &ecBad.PublicKey, ""},
		{"Ed25519", edPub, ""},
		{"HMAC secret", []byte("secret"), ""},
		{"nil RSA", (*rsa.PublicKey)(nil), ""},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		got, err := KeyAlg(tt.key)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("%s: KeyAlg = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestZeroStaticKeys(t *testing.T) {
	t.Parallel()
	var k StaticKeys
	if keys, err := k.PublicKeys(AlgRS256, ""); len(keys) != 0 || !errors.Is(err, ErrUnknownKey) {
		t.Errorf("zero StaticKeys: PublicKeys = %v, %v; want none and ErrUnknownKey", keys, err)
	}
}

// An RSA modulus longer than MaxRSABits is refused where keys are loaded:
// from a JWKS document it is an unusable key.
func TestRSAKeyTooLong(t *testing.T) {
	n := new(big.Int).Lsh(big.NewInt(1), MaxRSABits) // MaxRSABits+1 bits
	n.SetBit(n, 0, 1)
	if _, err := keyAlg(&rsa.PublicKey{N: n, E: 65537}); err == nil || !strings.Contains(err.Error(), "longer than 8192") {
		t.Fatalf("keyAlg(%d-bit key) = %v, want an error naming the bound", n.BitLen(), err)
	}
	raw := `{"kty":"RSA","n":"` + base64.RawURLEncoding.EncodeToString(n.Bytes()) + `","e":"AQAB"}`
	if _, err := parseJWK([]byte(raw)); err == nil {
		t.Fatal("parseJWK took an RSA key longer than MaxRSABits")
	}
	max := new(big.Int).Rsh(n, 1) // MaxRSABits bits
	max.SetBit(max, 0, 1)
	if alg, err := keyAlg(&rsa.PublicKey{N: max, E: 65537}); err != nil || alg != AlgRS256 {
		t.Fatalf("keyAlg(%d-bit key) = %q, %v; want RS256", max.BitLen(), alg, err)
	}
}
