// Package interceptor is the inbound path between the frame decoder and the
// broker: a Chain of Stages that every decoded frame passes through, in a
// fixed order:
//
//	principal ─► session limiter ─► (your stages)
//
// PrincipalStage identifies the session at CONNECT (anonymous, or by a
// token that a TokenVerifier checks: package jwtauth verifies JWTs signed
// with HS256, RS256 or ES256), refuses a banned principal, applies a newer
// token sent during the session, and checks the principal's destination
// patterns. LimitStage counts the limited commands (SEND by default)
// against the session's own limiter and drops the excess silently: no
// ERROR, no RECEIPT; with escalation it closes an abusive session and bans
// its client IP and principal.
//
// A stage answers one of three outcomes: Pass (next stage), Drop (stop
// silently) or Reject (ERROR frame and close). The Chain counts every frame
// it is given as received, every frame a stage stops as dropped under the
// stage's reason and every other one as passed, so for every session and
// in total
//
//	received = passed + dropped(reason)
//
// holds exactly, whatever stages a program adds; the Chain's Observer is
// the one place a program counts frames (metrics.Metrics through
// cmd/wsserver's adapter).
//
// SENDs inside a transaction are the exception that keeps the identity
// honest: they pass the stages on arrival (so a forbidden destination is
// refused at once) but are held as pending, and settled when the
// transaction ends: Chain.Commit asks every Committer stage to charge all
// of them together, so a COMMIT never releases more than the session's
// limit allows at that moment, however slowly the transaction was filled;
// they then count as passed, or all as dropped under the stage's reason.
// An ABORT, or a session that ends with the transaction open, counts them
// as dropped under outcome.DropAborted. Until then
//
//	received = passed + dropped(reason) + pending
//
// A stage that holds something for a session (a slot in a session cap)
// implements Closer to learn when the session ended.
//
// A program that embeds the server adds its own stage by implementing
// Stage (one method) and placing it after the limiter; see ExampleChain.
package interceptor
