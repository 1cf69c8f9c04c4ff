package jwtauth_test

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/jwtauth"
	"github.com/stompgate/stompgate/stompframe"
)

// A PrincipalStage that authenticates sessions with HS256 tokens.
func ExampleNew() {
	secret := []byte("a shared secret of at least 32 bytes!")
	now := time.Date(2026, time.January, 2, 15, 0, 0, 0, time.UTC)
	v, err := jwtauth.New(jwtauth.Config{Secret: secret})
	if err != nil {
		panic(err)
	}
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{
		Verifier: v,
		Required: true,
		Now:      func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}

	// The identity provider's side: a token for alice, who may send to
	// her room only.
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub":   "alice",
		"exp":   now.Add(time.Hour).Unix(),
		"stomp": map[string]any{"send": []string{"/topic/room.42"}},
	}).SignedString(secret)
	if err != nil {
		panic(err)
	}

	s := &interceptor.Session{ID: "1"}
	connect := &stompframe.Frame{Command: "CONNECT"}
	connect.Add("passcode", token)
	fmt.Println("CONNECT:", principal.Handle(s, connect, now).Outcome)
	fmt.Println("principal:", s.Principal.Name, "until", s.Principal.Expires.Format(time.TimeOnly))

	send := &stompframe.Frame{Command: "SEND"}
	send.Add("destination", "/topic/room.7")
	r := principal.Handle(s, send, now)
	fmt.Println("SEND to room.7:", r.Outcome, r.Message)
	// Output:
	// CONNECT: pass
	// principal: alice until 16:00:00
	// SEND to room.7: reject permission denied
}
