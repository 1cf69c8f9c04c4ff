package history

import (
	"fmt"
	"strconv"
	"strings"
)

// Header names a MESSAGE and a SUBSCRIBE carry on a destination with
// history. HeaderOffset is RabbitMQ's name and, on a MESSAGE, RabbitMQ's
// meaning (the message's own offset in its stream); HeaderEpoch and
// HeaderRecovered are stompgate's own.
const (
	// HeaderOffset on a MESSAGE is the message's offset; on a SUBSCRIBE
	// it is where to start: "first", "last", "next", or an offset ("N"
	// or "offset=N", RabbitMQ's STOMP form), inclusive.
	HeaderOffset = "x-stream-offset"
	// HeaderEpoch on a MESSAGE is the epoch its offset belongs to; on a
	// SUBSCRIBE, the epoch of the offset asked for.
	HeaderEpoch = "x-stream-epoch"
	// HeaderRecovered on the RECEIPT of a SUBSCRIBE with a position and
	// on its first MESSAGE is "true" or "false".
	HeaderRecovered = "recovered"
	// HeaderRecoveryReason accompanies recovered:false with a Reason.
	HeaderRecoveryReason = "recovery-reason"
)

// MaxEpochLen bounds an epoch, on the wire and in a SUBSCRIBE header.
// Epochs this package makes are 16 characters; the bound leaves room
// and keeps a hostile header or payload from making anyone hold more.
const MaxEpochLen = 64

// Position is one message's place in a destination's history: its
// offset, counted from 1 and increasing by exactly 1 per message, and
// the epoch those offsets belong to. Two positions compare only within
// one epoch; a new epoch means continuity was lost and offsets start
// again.
type Position struct {
	Offset uint64
	Epoch  string
}

// StartKind says where a subscription asks its delivery to start.
type StartKind uint8

const (
	// StartNext: only messages published from now on; no replay. It is
	// what a SUBSCRIBE without a position gets, and RabbitMQ's default.
	StartNext StartKind = iota
	// StartFirst: every message still retained, then live.
	StartFirst
	// StartLast: the latest message, then live (RabbitMQ: the last
	// chunk; here a chunk is one message).
	StartLast
	// StartAt: from Start.Offset (inclusive) of Start.Epoch: a client
	// that received offset N of epoch E resumes with N+1 and E.
	StartAt
)

// Start is where a subscription asks to start. The zero value is
// StartNext.
type Start struct {
	Kind StartKind
	// Offset is the first offset wanted, for StartAt.
	Offset uint64
	// Epoch is the epoch of Offset, for StartAt; empty means the client
	// did not say, and a replay is then never reported as recovered
	// (ReasonNoEpoch), since continuity cannot be proven.
	Epoch string
}

// ParseStart reads a SUBSCRIBE's HeaderOffset and HeaderEpoch values
// (empty when absent). No offset header is StartNext. The epoch is
// refused when longer than MaxEpochLen or not printable ASCII, so that
// it never needs escaping and can be compared as sent.
func ParseStart(offset, epoch string) (Start, error) {
	if len(epoch) > MaxEpochLen {
		return Start{}, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrInvalidStart, HeaderEpoch, len(epoch), MaxEpochLen)
	}
	for i := 0; i < len(epoch); i++ {
		if c := epoch[i]; c <= ' ' || c > '~' {
			return Start{}, fmt.Errorf("%w: %s is not printable ASCII", ErrInvalidStart, HeaderEpoch)
		}
	}
	switch offset {
	case "", "next":
		return Start{Kind: StartNext}, nil
	case "first":
		return Start{Kind: StartFirst}, nil
	case "last":
		return Start{Kind: StartLast}, nil
	}
	digits := strings.TrimPrefix(offset, "offset=")
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || digits == "" || digits[0] == '+' {
		return Start{}, fmt.Errorf("%w: %s %.32q is not first, last, next or an offset", ErrInvalidStart, HeaderOffset, offset)
	}
	return Start{Kind: StartAt, Offset: n, Epoch: epoch}, nil
}

// Reason says why a recovery was refused. Its values are bounded (one of
// the constants), fit for a metric label and a header.
type Reason string

const (
	// ReasonNone: recovered.
	ReasonNone Reason = ""
	// ReasonTrimmed: some of the messages asked for are no longer
	// retained (older than the history's count or age).
	ReasonTrimmed Reason = "trimmed"
	// ReasonTooMany: more messages were missed than a recovery may
	// replay (Config.MaxRecovery).
	ReasonTooMany Reason = "too_many"
	// ReasonEpochChanged: the position's epoch is not the history's:
	// continuity was lost since (Redis restarted empty, keys evicted),
	// or the position comes from a history that was evicted.
	ReasonEpochChanged Reason = "epoch_changed"
	// ReasonNoEpoch: the position named an offset without its epoch, so
	// continuity cannot be proven; what was asked for is replayed.
	ReasonNoEpoch Reason = "no_epoch"
	// ReasonAhead: the offset asked for is beyond the next one of this
	// epoch: it was never published in it.
	ReasonAhead Reason = "ahead"
	// ReasonOverrun: live messages arrived faster than the replay could
	// be sent and the splice's buffer filled (Recovery).
	ReasonOverrun Reason = "overrun"
	// ReasonGap: a live message skipped offsets (a Pub/Sub message was
	// lost, e.g. during a failover): the subscription continues but has
	// a hole, and should recover again from the last offset it has.
	ReasonGap Reason = "gap"
	// ReasonUnavailable: the history could not be read (Redis
	// unreachable or too slow).
	ReasonUnavailable Reason = "unavailable"
	// ReasonNoHistory: the SUBSCRIBE named a position, but its
	// destination keeps no history (no rule gives it one).
	ReasonNoHistory Reason = "no_history"
	// ReasonInvalid: a retained message failed its checks when it was
	// read back (its signature, its age, its destination), so the
	// replay would have had a hole.
	ReasonInvalid Reason = "invalid"
)

// Reasons lists every Reason but ReasonNone, for metrics.
var Reasons = []Reason{ReasonTrimmed, ReasonTooMany, ReasonEpochChanged, ReasonNoEpoch,
	ReasonAhead, ReasonOverrun, ReasonGap, ReasonUnavailable, ReasonNoHistory, ReasonInvalid}
