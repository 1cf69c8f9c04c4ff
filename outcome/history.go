package outcome

// Results of a recovery (stompgate_history_recoveries_total{result}).
const (
	// RecoveryRecovered: every message missed was replayed.
	RecoveryRecovered = "recovered"
	// RecoveryNotRecovered: the subscription started without them, and
	// its client was told (recovered:false).
	RecoveryNotRecovered = "not_recovered"
)

// RecoveryNone is the reason label of a recovery that succeeded.
const RecoveryNone = "none"

// RecoveryReasons returns every reason a recovery can fail for
// (stompgate_history_recoveries_total{reason}): the values of package
// history's Reasons, which a test of cmd/wsserver keeps equal. The
// slice is a fresh copy.
func RecoveryReasons() []string {
	return []string{"trimmed", "too_many", "epoch_changed", "no_epoch", "ahead", "overrun", "gap", "unavailable", "no_history", "invalid"}
}

// Why a history message was lost before Redis had it
// (stompgate_history_publish_lost_total{reason}).
const (
	// HistoryLostQueueFull: the publisher's queue was full, or the
	// message could not be queued at all.
	HistoryLostQueueFull = "queue_full"
	// HistoryLostRedisError: Redis failed the batch.
	HistoryLostRedisError = "redis_error"
)
