package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/outcome"
)

// The command label of the frame metrics takes one of the client commands
// of STOMP 1.2 (section "Client Frames"), spelled as on the wire, or
// "other" for anything else: STOMP commands are case-sensitive, so "send"
// is "other".
const (
	cmdOther = iota
	cmdConnect
	cmdStomp
	cmdSend
	cmdSubscribe
	cmdUnsubscribe
	cmdAck
	cmdNack
	cmdBegin
	cmdCommit
	cmdAbort
	cmdDisconnect

	numCommands = iota
)

var commandLabels = [numCommands]string{
	cmdOther:       labelOther,
	cmdConnect:     "CONNECT",
	cmdStomp:       "STOMP",
	cmdSend:        "SEND",
	cmdSubscribe:   "SUBSCRIBE",
	cmdUnsubscribe: "UNSUBSCRIBE",
	cmdAck:         "ACK",
	cmdNack:        "NACK",
	cmdBegin:       "BEGIN",
	cmdCommit:      "COMMIT",
	cmdAbort:       "ABORT",
	cmdDisconnect:  "DISCONNECT",
}

// commandIndex maps a frame command to its pre-resolved slot. A switch over
// constant strings compiles to length and byte compares: no hashing, no
// allocation.
func commandIndex(command string) int {
	switch command {
	case "SEND":
		return cmdSend
	case "SUBSCRIBE":
		return cmdSubscribe
	case "UNSUBSCRIBE":
		return cmdUnsubscribe
	case "ACK":
		return cmdAck
	case "NACK":
		return cmdNack
	case "CONNECT":
		return cmdConnect
	case "STOMP":
		return cmdStomp
	case "BEGIN":
		return cmdBegin
	case "COMMIT":
		return cmdCommit
	case "ABORT":
		return cmdAbort
	case "DISCONNECT":
		return cmdDisconnect
	}
	return cmdOther
}

// DropReason says why the interceptor chain dropped an inbound frame; it is
// the reason label of stompgate_frames_dropped_total. The zero value is
// DropOther.
type DropReason uint8

// The drop reasons. A value outside this list is counted as "other".
const (
	// DropOther is a reason this package does not name.
	DropOther DropReason = iota
	// DropRateLimit: the session limiter dropped the frame silently.
	DropRateLimit
	// DropRejected: a stage rejected the frame (authentication,
	// permission, an abuse close).
	DropRejected
	// DropAborted: a SEND held in a transaction that was aborted, or
	// still open when its session ended.
	DropAborted
	// DropPrincipalLimit: the per-principal send limit dropped the
	// frame silently.
	DropPrincipalLimit

	numDropReasons = iota
)

var dropReasonLabels = [numDropReasons]string{
	DropOther:     labelOther,
	DropRateLimit: outcome.DropRateLimit.String(),
	DropRejected:  outcome.DropRejected,
	DropAborted:   outcome.DropAborted.String(),

	DropPrincipalLimit: outcome.DropPrincipalLimit.String(),
}

// DropReasonOf returns the DropReason of a reason the interceptor chain
// reported (interceptor.Result.Reason): the chain's own rate_limit,
// transaction_aborted and principal_limit by value, any other reason as rejected, so that a
// stage a program adds can never create a series.
func DropReasonOf(reason *outcome.Reason) DropReason {
	switch reason {
	case outcome.DropRateLimit:
		return DropRateLimit
	case outcome.DropAborted:
		return DropAborted
	case outcome.DropPrincipalLimit:
		return DropPrincipalLimit
	}
	return DropRejected
}

// String returns the label value r is counted under.
func (r DropReason) String() string { return labelOf(dropReasonLabels[:], r) }

func (m *Metrics) buildFrames(b *builder) {
	received := b.counterVec("stompgate_frames_received_total",
		"Inbound STOMP frames that entered the interceptor chain, by command. "+
			"Equals passed plus dropped.", "command")
	passed := b.counterVec("stompgate_frames_passed_total",
		"Inbound STOMP frames that passed every interceptor stage and reached the broker, by command.",
		"command")
	dropped := b.counterVec("stompgate_frames_dropped_total",
		"Inbound STOMP frames an interceptor stage dropped, by command and reason.",
		"command", "reason")
	for c, cl := range commandLabels {
		m.framesReceived[c] = received.WithLabelValues(cl)
		m.framesPassed[c] = passed.WithLabelValues(cl)
		for r, rl := range dropReasonLabels {
			m.framesDropped[c][r] = dropped.WithLabelValues(cl, rl)
		}
	}
	kinds := b.counterVec("stompgate_protocol_error_closes_total",
		"Sessions closed with an ERROR frame for a protocol violation, by kind.", "kind")
	m.protocolErrors = make(map[string]prometheus.Counter)
	for _, k := range outcome.ProtocolErrorKinds() {
		m.protocolErrors[k] = kinds.WithLabelValues(k)
	}
	m.protocolErrorsOther = kinds.WithLabelValues(labelOther)
}

// FrameReceived counts an inbound frame entering the interceptor chain
// (stompgate_frames_received_total{command}). Every frame counted here must
// later be counted exactly once more, by FramePassed or by FrameDropped, so
// that received = passed + dropped holds per command.
func (m *Metrics) FrameReceived(command string) {
	if m == nil {
		return
	}
	m.framesReceived[commandIndex(command)].Inc()
}

// FramePassed counts a frame that passed every stage
// (stompgate_frames_passed_total{command}). Only passed frames are
// throughput.
func (m *Metrics) FramePassed(command string) {
	if m == nil {
		return
	}
	m.framesPassed[commandIndex(command)].Inc()
}

// FrameDropped counts a frame a stage dropped
// (stompgate_frames_dropped_total{command,reason}).
func (m *Metrics) FrameDropped(command string, reason DropReason) {
	if m == nil {
		return
	}
	m.framesDropped[commandIndex(command)][known(dropReasonLabels[:], reason)].Inc()
}

// ProtocolErrorClose counts a session closed with an ERROR frame
// (stompgate_protocol_error_closes_total{kind}). kind is one of
// ProtocolErrorKinds; any other string is counted as "other", so a caller
// can never create a new series.
func (m *Metrics) ProtocolErrorClose(kind string) {
	if m == nil {
		return
	}
	c, ok := m.protocolErrors[kind]
	if !ok {
		c = m.protocolErrorsOther
	}
	c.Inc()
}
