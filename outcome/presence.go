package outcome

// Why a presence request was refused or cut short
// (stompgate_presence_refused_total{reason}).
const (
	// PresenceNotEnabled: a watch of a destination no rule enables
	// presence for.
	PresenceNotEnabled = "not_enabled"
	// PresenceWatchLimit: a session already watched its most presence
	// destinations.
	PresenceWatchLimit = "watch_limit"
	// PresenceInfoInvalid: client info over the byte limit, or not UTF-8.
	PresenceInfoInvalid = "info_invalid"
	// PresenceStoreError: the store could not answer a snapshot in time.
	PresenceStoreError = "store_error"
)

// PresenceRefusals returns every presence refusal reason. The slice is a
// fresh copy.
func PresenceRefusals() []string {
	return []string{PresenceNotEnabled, PresenceWatchLimit, PresenceInfoInvalid, PresenceStoreError}
}

// The kinds of presence frames sent to watchers
// (stompgate_presence_frames_total{kind}), as their JSON "type" says.
const (
	// PresenceSnapshot: the membership of a destination, first on a
	// watch and again after a gap in the events.
	PresenceSnapshot = "snapshot"
	// PresenceDelta: a batch of joins and leaves.
	PresenceDelta = "delta"
)

// PresenceFrameKinds returns every presence frame kind. The slice is a
// fresh copy.
func PresenceFrameKinds() []string { return []string{PresenceSnapshot, PresenceDelta} }
