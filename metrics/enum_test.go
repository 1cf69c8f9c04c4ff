package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessioncap"
)

func TestEnumLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want CapScope
	}{
		{sessioncap.ScopeIP, CapScopeIP},
		{sessioncap.ScopePrincipal, CapScopePrincipal},
		{outcome.CapScopeDestination, CapScopeDestination},
		{labelOther, CapScopeOther},
		{"", CapScopeOther},
		{"IP", CapScopeOther},
	} {
		if got := CapScopeOf(tc.in); got != tc.want {
			t.Errorf("CapScopeOf(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for s := range CapScope(len(capScopeLabels)) {
		if got := CapScopeOf(s.String()); got != s {
			t.Errorf("CapScopeOf(%v.String()) = %v, want %v", s, got, s)
		}
	}
	if got := known(capScopeLabels, CapScope(200)); got != CapScopeOther {
		t.Errorf("known(CapScope(200)) = %v, want other", got)
	}
}

// TestNamedValuesAreOutcomes checks that each value metrics names is
// counted under the outcome it stands for: the label lists come from
// package outcome in its order, and these names index them.
func TestNamedValuesAreOutcomes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ got, want string }{
		{RelayOut.String(), outcome.RelayOut},
		{RelayIn.String(), outcome.RelayIn},
		{RelayDropQueueFull.String(), outcome.RelayDropQueueFull},
		{RelayDropRedisError.String(), outcome.RelayDropRedisError},
		{RelayDropMalformed.String(), outcome.RelayDropMalformed},
		{RelayDropTooLarge.String(), outcome.RelayDropTooLarge},
		{RelayDropUnsigned.String(), outcome.RelayDropUnsigned},
		{RelayDropBadSignature.String(), outcome.RelayDropBadSignature},
		{RelayDropStale.String(), outcome.RelayDropStale},
		{RelayResubscribeMoved.String(), outcome.RelayResubscribeMoved},
		{RelayResubscribeConnection.String(), outcome.RelayResubscribeConnection},
		{RelayResubscribeUnanswered.String(), outcome.RelayResubscribeUnanswered},
		{CapScopeIP.String(), outcome.CapScopeIP},
		{CapScopePrincipal.String(), outcome.CapScopePrincipal},
		{ProcsLoad.String(), outcome.ProcsLoad},
		{ProcsQueue.String(), outcome.ProcsQueue},
		{ProcsLower.String(), outcome.ProcsLower},
		{PrefixLimitHandshake.String(), outcome.PrefixLimitHandshake},
		{PrefixLimitSessionCap.String(), outcome.PrefixLimitSessionCap},
		{HTTPTimeoutIdle.String(), outcome.HTTPTimeoutIdle},
		{HTTPTimeoutRead.String(), outcome.HTTPTimeoutRead},
		{storeLabels[storeRedis], outcome.StoreRedis},
		{storeLabels[storeMemory], outcome.StoreMemory},
		{storeLabels[storeLocal], outcome.StoreLocal},
		{localLabels[localRefused], outcome.LocalRefused},
		{localLabels[localInFlight], outcome.LocalInFlight},
		{localLabels[localQueueFull], outcome.LocalQueueFull},
		{localLabels[localQueueWait], outcome.LocalQueueWait},
		{localLabels[localTimeout], outcome.LocalTimeout},
	} {
		if tt.got != tt.want {
			t.Errorf("a named value is counted under %q, want %q", tt.got, tt.want)
		}
	}
}
