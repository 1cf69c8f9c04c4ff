// Package attack is loadtest's abuse scenario: attacks one client can
// make on a server (floods, oversized and malformed frames, slow readers,
// connection and subscription churn, relay injection and more), each run
// beside an honest room, with the server's RSS and CPU sampled throughout
// and a verdict per attack on what the server let the attacker do.
package attack
