// Package interceptor is the inbound path between the frame decoder and the
// broker: a Chain of Stages that every decoded frame passes through, in a
// fixed order:
//
//	principal ─► session limiter ─► (your stages) ─► metrics
//
// PrincipalStage identifies the session at CONNECT (anonymous, or a JWT
// signed with HS256, RS256 or ES256; see KeySource, StaticKeys, JWKS),
// refuses a banned principal, applies a newer token sent during the
// session, and checks the principal's destination patterns. LimitStage counts the limited commands (SEND by default)
// against the session's own limiter and drops the excess silently: no
// ERROR, no RECEIPT; with escalation it closes an abusive session and bans
// its client IP and principal. MetricsStage counts
// only the frames that passed everything before it.
//
// A stage answers one of three outcomes: Pass (next stage), Drop (stop
// silently) or Reject (ERROR frame and close). The Chain counts every frame
// it is given as received, every frame a stage stops as dropped under the
// stage's reason and every other one as passed, so for every session and
// in total
//
//	received = passed + dropped(reason)
//
// holds exactly, whatever stages a program adds.
//
// A program that embeds the server adds its own stage by implementing
// Stage (one method) and placing it before the MetricsStage; see
// ExampleChain.
package interceptor
