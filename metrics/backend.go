package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/server"
)

// The endpoint label of stompgate_api_requests_total: api's endpoints,
// and "other".
var apiEndpointLabels = []string{api.EndpointPublish, api.EndpointDisconnect, api.EndpointSessions, labelOther}

// The code label of stompgate_api_requests_total: the statuses the API
// answers with, and "other".
var apiCodes = []int{http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnauthorized, http.StatusInternalServerError}

// The result label of stompgate_app_messages_total.
var appResultLabels = []string{server.AppOK, server.AppError, server.AppNoBackend, labelOther}

// backendMetrics are the collectors of the backend features: the server
// API, app messages and user destinations.
type backendMetrics struct {
	api  [][]prometheus.Counter // by endpoint index, then code index (len(apiCodes) is "other")
	app  []prometheus.Counter   // by appResultLabels index
	user prometheus.Counter
}

func (m *Metrics) buildBackend(b *builder) {
	reqs := b.counterVec("stompgate_api_requests_total",
		"Server API requests answered, by endpoint and HTTP status code.", "endpoint", "code")
	m.backend.api = make([][]prometheus.Counter, len(apiEndpointLabels))
	for i, e := range apiEndpointLabels {
		m.backend.api[i] = make([]prometheus.Counter, len(apiCodes)+1)
		for j, c := range apiCodes {
			m.backend.api[i][j] = reqs.WithLabelValues(e, strconv.Itoa(c))
		}
		m.backend.api[i][len(apiCodes)] = reqs.WithLabelValues(e, labelOther)
	}
	app := b.counterVec("stompgate_app_messages_total",
		"SENDs to app destinations handed to the backend (the app stream), by result: ok, error (the append failed; the session got ERROR), no_backend (none configured).", "result")
	m.backend.app = make([]prometheus.Counter, len(appResultLabels))
	for i, r := range appResultLabels {
		m.backend.app[i] = app.WithLabelValues(r)
	}
	m.backend.user = b.counter("stompgate_user_deliveries_total",
		"MESSAGE frames queued to sessions through user destinations (/user/queue/...).")
}

// APIRequest counts one answered server API request
// (stompgate_api_requests_total{endpoint,code}).
func (m *Metrics) APIRequest(endpoint string, code int) {
	if m == nil {
		return
	}
	e := len(apiEndpointLabels) - 1
	for i, l := range apiEndpointLabels {
		if l == endpoint {
			e = i
			break
		}
	}
	c := len(apiCodes)
	for i, x := range apiCodes {
		if x == code {
			c = i
			break
		}
	}
	m.backend.api[e][c].Inc()
}

// AppHandled counts one app message by result
// (stompgate_app_messages_total{result}).
func (m *Metrics) AppHandled(result string) {
	if m == nil {
		return
	}
	i := len(appResultLabels) - 1
	for j, l := range appResultLabels {
		if l == result {
			i = j
			break
		}
	}
	m.backend.app[i].Inc()
}

// UserDelivered counts one MESSAGE queued through a user destination
// (stompgate_user_deliveries_total).
func (m *Metrics) UserDelivered() {
	if m == nil {
		return
	}
	m.backend.user.Inc()
}
