package history

import (
	"fmt"
	"testing"
)

// snapshot returns a Snapshot of epoch E whose retained offsets are
// first..last, holding the newest held of them.
func snapshot(first, last uint64, held int) Snapshot {
	s := Snapshot{Epoch: "E", First: first, Last: last}
	for o := max64(first, last-uint64(held)+1); o <= last && o >= first; o++ {
		s.Entries = append(s.Entries, Entry{Offset: o, Data: fmt.Appendf(nil, "m%d", o)})
	}
	return s
}

func TestSince(t *testing.T) {
	t.Parallel()
	full := snapshot(11, 20, 10) // offsets 11..20 retained, all held
	empty := Snapshot{Epoch: "E", First: 21, Last: 20}
	none := Snapshot{First: 1}
	holey := snapshot(11, 20, 10)
	holey.Entries = append(holey.Entries[:3:3], holey.Entries[4:]...) // 14 missing
	for _, tc := range []struct {
		name      string
		snap      Snapshot
		start     Start
		max       int
		first     uint64 // first replayed; 0: none
		n         int
		recovered bool
		reason    Reason
	}{
		{"next", full, Start{Kind: StartNext}, 5, 0, 0, true, ReasonNone},
		{"last", full, Start{Kind: StartLast}, 5, 20, 1, true, ReasonNone},
		{"last of empty", empty, Start{Kind: StartLast}, 5, 0, 0, true, ReasonNone},
		{"last of none", none, Start{Kind: StartLast}, 5, 0, 0, true, ReasonNone},
		{"first of none", none, Start{Kind: StartFirst}, 5, 0, 0, true, ReasonNone},
		{"first of the zero Snapshot", Snapshot{}, Start{Kind: StartFirst}, 5, 0, 0, true, ReasonNone},
		{"first", full, Start{Kind: StartFirst}, 10, 11, 10, true, ReasonNone},
		{"first too many", full, Start{Kind: StartFirst}, 9, 0, 0, false, ReasonTooMany},
		{"at 15", full, Start{Kind: StartAt, Offset: 15, Epoch: "E"}, 10, 15, 6, true, ReasonNone},
		{"at oldest", full, Start{Kind: StartAt, Offset: 11, Epoch: "E"}, 10, 11, 10, true, ReasonNone},
		{"caught up", full, Start{Kind: StartAt, Offset: 21, Epoch: "E"}, 10, 0, 0, true, ReasonNone},
		{"trimmed", full, Start{Kind: StartAt, Offset: 10, Epoch: "E"}, 100, 0, 0, false, ReasonTrimmed},
		{"offset 0 is before 1", snapshot(2, 5, 4), Start{Kind: StartAt, Offset: 0, Epoch: "E"}, 10, 0, 0, false, ReasonTrimmed},
		{"too many by one", full, Start{Kind: StartAt, Offset: 15, Epoch: "E"}, 5, 0, 0, false, ReasonTooMany},
		{"exactly max", full, Start{Kind: StartAt, Offset: 16, Epoch: "E"}, 5, 16, 5, true, ReasonNone},
		{"epoch changed", full, Start{Kind: StartAt, Offset: 15, Epoch: "F"}, 10, 0, 0, false, ReasonEpochChanged},
		{"no history any more", none, Start{Kind: StartAt, Offset: 15, Epoch: "E"}, 10, 0, 0, false, ReasonEpochChanged},
		{"ahead", full, Start{Kind: StartAt, Offset: 22, Epoch: "E"}, 10, 0, 0, false, ReasonAhead},
		{"no epoch replays but does not claim", full, Start{Kind: StartAt, Offset: 19}, 10, 19, 2, false, ReasonNoEpoch},
		{"no epoch caught up", full, Start{Kind: StartAt, Offset: 21}, 10, 0, 0, false, ReasonNoEpoch},
		{"snapshot shorter than asked", snapshot(1, 20, 3), Start{Kind: StartAt, Offset: 15, Epoch: "E"}, 10, 0, 0, false, ReasonTrimmed},
		{"snapshot with a hole", holey, Start{Kind: StartAt, Offset: 12, Epoch: "E"}, 10, 0, 0, false, ReasonTrimmed},
		{"max below 1 is the default", full, Start{Kind: StartFirst}, 0, 11, 10, true, ReasonNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Since(tc.snap, tc.start, tc.max)
			if res.Recovered != tc.recovered || res.Reason != tc.reason || len(res.Entries) != tc.n {
				t.Fatalf("Since = recovered %v reason %q %d entries; want %v %q %d",
					res.Recovered, res.Reason, len(res.Entries), tc.recovered, tc.reason, tc.n)
			}
			if tc.n > 0 && res.Entries[0].Offset != tc.first {
				t.Fatalf("first replayed = %d, want %d", res.Entries[0].Offset, tc.first)
			}
			for i := 1; i < len(res.Entries); i++ {
				if res.Entries[i].Offset != res.Entries[i-1].Offset+1 {
					t.Fatalf("replay not consecutive at %d: %d after %d", i, res.Entries[i].Offset, res.Entries[i-1].Offset)
				}
			}
			if want := (Position{Offset: tc.snap.Last + 1, Epoch: tc.snap.Epoch}); res.Next != want {
				t.Fatalf("Next = %+v, want %+v", res.Next, want)
			}
		})
	}
}
