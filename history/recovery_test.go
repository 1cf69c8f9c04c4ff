package history

import (
	"fmt"
	"slices"
	"testing"
)

// ev is one event of a recovery step table: a live message (offset,
// epoch) or, with apply set, the history's Result.
type ev struct {
	live  uint64
	epoch string
	apply *Result
	// What the step must say.
	emit      []uint64
	decided   bool
	recovered bool
	reason    Reason
	dropped   int
	gap       bool
}

func replay(epoch string, from, to uint64) *Result {
	r := &Result{Recovered: true, Next: Position{Offset: to + 1, Epoch: epoch}}
	for o := from; o <= to; o++ {
		r.Entries = append(r.Entries, Entry{Offset: o, Data: fmt.Appendf(nil, "m%d", o)})
	}
	return r
}

func TestRecoverySteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		maxBuffer int
		events    []ev
	}{
		{"replay then held, overlap dropped", 10, []ev{
			{live: 8, epoch: "E"},
			{live: 9, epoch: "E"},
			{apply: replay("E", 5, 8), emit: []uint64{5, 6, 7, 8, 9}, decided: true, recovered: true, dropped: 1},
			{live: 10, epoch: "E", emit: []uint64{10}},
			{live: 10, epoch: "E", dropped: 1},
		}},
		{"nothing held", 10, []ev{
			{apply: replay("E", 5, 6), emit: []uint64{5, 6}, decided: true, recovered: true},
			{live: 7, epoch: "E", emit: []uint64{7}},
		}},
		{"caught up already", 10, []ev{
			{live: 7, epoch: "E"},
			{apply: &Result{Recovered: true, Next: Position{7, "E"}}, emit: []uint64{7}, decided: true, recovered: true},
		}},
		{"held beyond the read is a gap", 10, []ev{
			{live: 10, epoch: "E"},
			{apply: replay("E", 5, 8), emit: []uint64{5, 6, 7, 8, 10}, decided: true, recovered: false, reason: ReasonGap},
		}},
		{"epoch changed between read and live", 10, []ev{
			{live: 1, epoch: "F"},
			{apply: replay("E", 5, 8), emit: []uint64{5, 6, 7, 8, 1}, decided: true, recovered: false, reason: ReasonEpochChanged},
		}},
		{"not recovered: only live", 10, []ev{
			{live: 50, epoch: "E"},
			{apply: &Result{Reason: ReasonTrimmed, Next: Position{50, "E"}}, emit: []uint64{50}, decided: true, reason: ReasonTrimmed},
			{live: 51, epoch: "E", emit: []uint64{51}},
		}},
		{"overrun settles at once", 2, []ev{
			{live: 20, epoch: "E"},
			{live: 21, epoch: "E"},
			{live: 22, epoch: "E", emit: []uint64{20, 21, 22}, decided: true, reason: ReasonOverrun},
			{apply: replay("E", 5, 19)},
			{live: 23, epoch: "E", emit: []uint64{23}},
		}},
		{"live gap after settling", 10, []ev{
			{apply: replay("E", 5, 5), emit: []uint64{5}, decided: true, recovered: true},
			{live: 6, epoch: "E", emit: []uint64{6}},
			{live: 9, epoch: "E", emit: []uint64{9}, gap: true, reason: ReasonGap},
			{live: 10, epoch: "E", emit: []uint64{10}},
		}},
		{"live epoch change after settling", 10, []ev{
			{apply: replay("E", 5, 5), emit: []uint64{5}, decided: true, recovered: true},
			{live: 1, epoch: "G", emit: []uint64{1}, gap: true, reason: ReasonEpochChanged},
			{live: 2, epoch: "G", emit: []uint64{2}},
		}},
		{"empty history: the first epoch starts at 1", 10, []ev{
			{apply: &Result{Recovered: true, Next: Position{Offset: 1}}, decided: true, recovered: true},
			{live: 1, epoch: "E", emit: []uint64{1}},
		}},
		{"empty history: a later first offset is a gap", 10, []ev{
			{apply: &Result{Recovered: true, Next: Position{Offset: 1}}, decided: true, recovered: true},
			{live: 3, epoch: "E", emit: []uint64{3}, gap: true, reason: ReasonGap},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecovery(tc.maxBuffer, 0)
			for i, e := range tc.events {
				var st Step
				if e.apply != nil {
					st = r.Apply(*e.apply)
				} else {
					st = r.Live(Message{Offset: e.live, Epoch: e.epoch})
				}
				var got []uint64
				for _, m := range st.Emit {
					got = append(got, m.Offset)
				}
				if !slices.Equal(got, e.emit) || st.Decided != e.decided || st.Recovered != e.recovered ||
					st.Reason != e.reason || st.Dropped != e.dropped || st.Gap != e.gap {
					t.Fatalf("event %d: step = emit %v decided %v recovered %v reason %q dropped %d gap %v; want %v %v %v %q %d %v",
						i, got, st.Decided, st.Recovered, st.Reason, st.Dropped, st.Gap,
						e.emit, e.decided, e.recovered, e.reason, e.dropped, e.gap)
				}
			}
		})
	}
}

// The buffer is bounded in bytes as well as messages.
func TestRecoveryOverrunBytes(t *testing.T) {
	t.Parallel()
	r := NewRecovery(100, 10)
	if st := r.Live(Message{Offset: 1, Epoch: "E", Data: make([]byte, 6)}); st.Decided {
		t.Fatal("6 bytes of 10 settled the recovery")
	}
	st := r.Live(Message{Offset: 2, Epoch: "E", Data: make([]byte, 5)})
	if !st.Decided || st.Recovered || st.Reason != ReasonOverrun || len(st.Emit) != 2 {
		t.Fatalf("11 bytes of 10: %+v, want overrun with both emitted", st)
	}
	if st := r.Apply(Result{Recovered: true}); st.Decided || len(st.Emit) != 0 {
		t.Fatalf("Apply after an overrun = %+v, want nothing", st)
	}
}
