package metrics

import (
	"net/http"
	"testing"

	"github.com/stompgate/stompgate/server"
)

func TestBackendCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.APIRequest(server.APIPublish, http.StatusAccepted)
	m.APIRequest(server.APIPublish, http.StatusAccepted)
	m.APIRequest(server.APISessions, http.StatusUnauthorized)
	m.APIRequest("nope", http.StatusTeapot)
	m.APIRequest(server.APIDisconnect, http.StatusTeapot)
	m.APIRequest("nope", http.StatusOK)
	m.AppHandled("nope")
	m.AppHandled(server.AppOK)
	m.AppHandled(server.AppError)
	m.AppHandled(server.AppError)
	m.AppHandled(server.AppNoBackend)
	m.AppHandled(server.AppRefused)
	m.AppRefused(server.AppBoundAddress)
	m.AppRefused(server.AppBoundAddress)
	m.AppRefused("nope")
	m.UserDelivered()
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_api_requests_total", []string{"endpoint", "publish", "code", "202"}, 2},
		{"stompgate_api_requests_total", []string{"endpoint", "sessions", "code", "401"}, 1},
		{"stompgate_api_requests_total", []string{"endpoint", "other", "code", "other"}, 1},
		{"stompgate_api_requests_total", []string{"endpoint", "disconnect", "code", "other"}, 1},
		{"stompgate_api_requests_total", []string{"endpoint", "other", "code", "200"}, 1},
		{"stompgate_app_messages_total", []string{"result", "other"}, 1},
		{"stompgate_app_messages_total", []string{"result", "ok"}, 1},
		{"stompgate_app_messages_total", []string{"result", "error"}, 2},
		{"stompgate_app_messages_total", []string{"result", "no_backend"}, 1},
		{"stompgate_app_messages_total", []string{"result", "refused"}, 1},
		{"stompgate_app_backlog_refusals_total", []string{"bound", "address"}, 2},
		{"stompgate_app_backlog_refusals_total", []string{"bound", "principal"}, 0},
		{"stompgate_app_backlog_refusals_total", []string{"bound", "other"}, 1},
		{"stompgate_user_deliveries_total", nil, 1},
	} {
		if got := sample(t, reg, tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	var nilM *Metrics
	nilM.APIRequest(server.APIPublish, 200)
	nilM.AppHandled(server.AppOK)
	nilM.AppRefused(server.AppBoundTotal)
	nilM.UserDelivered()
}
