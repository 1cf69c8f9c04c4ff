package outcome

// What became of an app message (stompgate_app_messages_total{result}).
const (
	AppOK        = "ok"
	AppError     = "error"
	AppRefused   = "refused" // the backlog is over a bound (AppBound*)
	AppNoBackend = KindNoBackend
)

// AppResults returns every app result. The slice is a fresh copy.
func AppResults() []string { return []string{AppOK, AppError, AppRefused, AppNoBackend} }

// The bounds an app handler's backlog is held to, each the label of a
// refusal (stompgate_app_backlog_refusals_total{bound}).
const (
	// AppBoundPrincipal: the bytes the sender's principal has waiting.
	AppBoundPrincipal = "principal"
	// AppBoundAddress: the bytes the sender's client address has waiting.
	AppBoundAddress = "address"
	// AppBoundTotal: the bytes every sender has waiting together.
	AppBoundTotal = "total"
	// AppBoundEntries: the number of messages waiting, whatever their size.
	AppBoundEntries = "entries"
)

// AppBacklogBounds returns every backlog bound. The slice is a fresh copy.
func AppBacklogBounds() []string {
	return []string{AppBoundPrincipal, AppBoundAddress, AppBoundTotal, AppBoundEntries}
}

// The server API's endpoints, each the endpoint label of stompgate_api_requests_total.
const (
	APIPublish    = "publish"
	APIDisconnect = "disconnect"
	APISessions   = "sessions"
	APIPresence   = "presence"
)

// APIEndpoints returns every API endpoint. The slice is a fresh copy.
func APIEndpoints() []string { return []string{APIPublish, APIDisconnect, APISessions, APIPresence} }

// The inbound budgets a session's reader pauses for, each the label of
// stompgate_input_pauses_total{budget}.
const (
	InputBudgetFrames = "frames"
	InputBudgetBytes  = "bytes"
)
