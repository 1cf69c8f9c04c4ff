package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/sessioncap"
)

func TestEnumLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want CapScope
	}{
		{sessioncap.ScopeIP, CapScopeIP},
		{sessioncap.ScopePrincipal, CapScopePrincipal},
		{labelOther, CapScopeOther},
		{"", CapScopeOther},
		{"IP", CapScopeOther},
	} {
		if got := CapScopeOf(tc.in); got != tc.want {
			t.Errorf("CapScopeOf(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for s := range CapScope(numCapScopes) {
		if got := CapScopeOf(s.String()); got != s {
			t.Errorf("CapScopeOf(%v.String()) = %v, want %v", s, got, s)
		}
	}
	if got := known(capScopeLabels[:], CapScope(200)); got != CapScopeOther {
		t.Errorf("known(CapScope(200)) = %v, want other", got)
	}
}
