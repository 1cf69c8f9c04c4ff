package outcome

// The rule label of frames dropped by rule
// (stompgate_rule_frames_dropped_total{rule}) takes the names of the
// policy's destination rules, which the policy bounds in number and
// spelling, and these two.
const (
	// RuleDefault: no destination rule matched the frame (or it has none,
	// as a COMMIT), so the session's default limit applied.
	RuleDefault = "default"
	// RuleOther: a rule name past the most the metrics keep apart.
	RuleOther = "other"
)

// The results of re-reading the policy file on SIGHUP
// (stompgate_policy_reloads_total{result}).
const (
	// ReloadApplied: the file parsed and validated; its destination rules
	// replaced the old ones.
	ReloadApplied = "applied"
	// ReloadRefused: the file could not be read or is invalid; the old
	// rules stay.
	ReloadRefused = "refused"
)

// ReloadResults returns every reload result. The slice is a fresh copy.
func ReloadResults() []string { return []string{ReloadApplied, ReloadRefused} }
