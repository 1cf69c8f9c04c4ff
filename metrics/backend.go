package metrics

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// The endpoint label of stompgate_api_requests_total: "other", then the
// server API's endpoints.
var apiEndpointLabels = append([]string{labelOther}, outcome.APIEndpoints()...)

// The statuses the API answers with, each its own code label value of
// stompgate_api_requests_total; any other status is counted as "other".
var apiCodes = []int{http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnauthorized, http.StatusInternalServerError}

// The result label of stompgate_app_messages_total: "other", then the
// server's results.
var appResultLabels = append([]string{labelOther}, outcome.AppResults()...)

// The bound label of stompgate_app_backlog_refusals_total: "other", then
// the server's bounds.
var appBoundLabels = append([]string{labelOther}, outcome.AppBacklogBounds()...)

// backendMetrics are the collectors of the backend features: the server
// API, app messages and user destinations.
type backendMetrics struct {
	api [][]prometheus.Counter // by apiEndpointLabels index, then 0 for "other" or 1+ the apiCodes index
	app []prometheus.Counter   // by appResultLabels index
	// appRefused is by appBoundLabels index.
	appRefused []prometheus.Counter
	user       prometheus.Counter
}

func (m *Metrics) buildBackend(b *builder) {
	reqs := b.counterVec("stompgate_api_requests_total",
		"Server API requests answered, by endpoint and HTTP status code.", "endpoint", "code")
	codes := []string{labelOther}
	for _, c := range apiCodes {
		codes = append(codes, strconv.Itoa(c))
	}
	m.backend.api = make([][]prometheus.Counter, len(apiEndpointLabels))
	for i, e := range apiEndpointLabels {
		m.backend.api[i] = make([]prometheus.Counter, len(codes))
		for j, c := range codes {
			m.backend.api[i][j] = reqs.WithLabelValues(e, c)
		}
	}
	app := b.counterVec("stompgate_app_messages_total",
		"SENDs to app destinations handed to the backend (the app stream), by result: ok, error (the append failed; the session got ERROR), refused (the backlog is over a bound; the session got ERROR), no_backend (none configured).", "result")
	m.backend.app = make([]prometheus.Counter, len(appResultLabels))
	resolve(m.backend.app, appResultLabels, app.WithLabelValues)
	refused := b.counterVec("stompgate_app_backlog_refusals_total",
		"App SENDs refused with ERROR \"backend busy\" because the messages the backend has not taken yet would pass a bound: principal, address, total (bytes) or entries.", "bound")
	m.backend.appRefused = make([]prometheus.Counter, len(appBoundLabels))
	resolve(m.backend.appRefused, appBoundLabels, refused.WithLabelValues)
	m.backend.user = b.counter("stompgate_user_deliveries_total",
		"MESSAGE frames queued to sessions through user destinations (/user/queue/...).")
}

// APIRequest counts one answered server API request
// (stompgate_api_requests_total{endpoint,code}). An endpoint or a status
// outside the known set is counted as "other".
func (m *Metrics) APIRequest(endpoint string, code int) {
	if m == nil {
		return
	}
	// slices.Index answers -1 for a status not in apiCodes: plus one, that
	// is 0, "other".
	m.backend.api[labelIndex(apiEndpointLabels, endpoint)][slices.Index(apiCodes, code)+1].Inc()
}

// AppHandled counts one app message by result
// (stompgate_app_messages_total{result}); a result the server does not
// define is counted as "other".
func (m *Metrics) AppHandled(result string) {
	if m == nil {
		return
	}
	m.backend.app[labelIndex(appResultLabels, result)].Inc()
}

// AppRefused counts one app message refused because the backend's
// backlog reached bound (stompgate_app_backlog_refusals_total{bound}); a
// bound the server does not define is counted as "other".
func (m *Metrics) AppRefused(bound string) {
	if m == nil {
		return
	}
	m.backend.appRefused[labelIndex(appBoundLabels, bound)].Inc()
}

// UserDelivered counts one MESSAGE queued through a user destination
// (stompgate_user_deliveries_total).
func (m *Metrics) UserDelivered() {
	if m == nil {
		return
	}
	m.backend.user.Inc()
}
