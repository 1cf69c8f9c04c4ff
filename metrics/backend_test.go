package metrics

import (
	"net/http"
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestBackendCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.APIRequest(outcome.APIPublish, http.StatusAccepted)
	m.APIRequest(outcome.APIPublish, http.StatusAccepted)
	m.APIRequest(outcome.APISessions, http.StatusUnauthorized)
	m.APIRequest("nope", http.StatusTeapot)
	m.APIRequest(outcome.APIDisconnect, http.StatusTeapot)
	m.APIRequest("nope", http.StatusOK)
	m.AppHandled("nope")
	m.AppHandled(outcome.AppOK)
	m.AppHandled(outcome.AppError)
	m.AppHandled(outcome.AppError)
	m.AppHandled(outcome.AppNoBackend)
	m.AppHandled(outcome.AppRefused)
	m.AppRefused(outcome.AppBoundAddress)
	m.AppRefused(outcome.AppBoundAddress)
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
	nilM.APIRequest(outcome.APIPublish, 200)
	nilM.AppHandled(outcome.AppOK)
	nilM.AppRefused(outcome.AppBoundTotal)
	nilM.UserDelivered()
}
