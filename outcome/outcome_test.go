package outcome

import "testing"

// checkUnique fails the test when two values of one set share a label:
// they would be counted as one series.
func checkUnique(t *testing.T, set string, labels []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range labels {
		if l == "" || l == "other" || seen[l] {
			t.Errorf("%s: label %q is empty, reserved or used twice", set, l)
		}
		seen[l] = true
	}
}

func labels[T interface{ String() string }](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func TestLabelsAreUnique(t *testing.T) {
	t.Parallel()
	checkUnique(t, "Closes", labels(Closes()))
	checkUnique(t, "Handshakes", labels(Handshakes()))
	checkUnique(t, "Reasons", append(labels(Reasons()), DropRejected))
	checkUnique(t, "ProtocolErrorKinds", ProtocolErrorKinds())
	checkUnique(t, "AppResults", AppResults())
	checkUnique(t, "AppBacklogBounds", AppBacklogBounds())
	checkUnique(t, "APIEndpoints", APIEndpoints())
	checkUnique(t, "SpanResults", SpanResults())
	checkUnique(t, "AdmissionReasons", AdmissionReasons())
	checkUnique(t, "ListenerReasons", ListenerReasons())
}

func TestCloseCodes(t *testing.T) {
	t.Parallel()
	for _, c := range Closes() {
		if code := c.Code(); code != 0 && (code < 1000 || code > 4999) {
			t.Errorf("%v: Code() = %d, want 0 or a close code (RFC 6455 section 7.4)", c, code)
		}
	}
}

func TestReasons(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    *Reason
		want *Close
	}{
		{DropRateLimit, nil},
		{DropAborted, nil},
		{DropPrincipalLimit, nil},
		{RejectAbuse, CloseRateLimitAbuse},
		{RejectBanned, CloseRateLimitAbuse},
		{RejectAuth, CloseAuthFailed},
		{RejectSessionCap, CloseSessionCap},
		{RejectPermission, CloseProtocolError},
		{RejectTokenFlood, CloseProtocolError},
		{NewDrop("mine"), nil},
		{NewReject("mine", nil), CloseProtocolError},
		{nil, nil},
	} {
		if got := tt.r.Close(); got != tt.want {
			t.Errorf("%q.Close() = %v, want %v", tt.r.String(), got, tt.want)
		}
	}
}
