package admission

import (
	"math"
	"time"
)

// windowSlack is how much wider than the backlog the window of a refusal
// is: the promised retries fill the window at random rather than in
// order, so it holds a quarter more than the backlog needs, and the last
// of N clients refused together is sent at most 1.25 × N / rate away
// (plus the first second).
const windowSlack = 1.25

// schedule spreads the retries of refused clients over the coming
// seconds at the admission rate. It remembers, for each of the next
// seconds up to the longest Retry-After, how many refused clients were
// told to come back in it, and gives a new refusal a second drawn at
// random among those that still have room, in a window as wide as the
// backlog needs. It is guarded by the Gate's mutex.
type schedule struct {
	rate float64 // retries per second the schedule promises
	max  int64   // the longest Retry-After, in seconds
	// slots is a ring indexed by absolute Unix second modulo its length:
	// slot.sec says which second a slot counts for, so a slot whose
	// second has passed reads as empty without being swept.
	slots []slot
}

type slot struct {
	sec int64 // the Unix second counted
	n   int   // clients told to come back in it
}

func newSchedule(rate float64, maxSecs int64) schedule {
	return schedule{rate: rate, max: maxSecs, slots: make([]slot, maxSecs+1)}
}

// capacity is how many retries the Unix second sec can take at the
// schedule's rate: the tokens that accrue in it, counted on whole
// seconds from the epoch so that a fractional rate (0.5/s) gives every
// other second one.
func (s *schedule) capacity(sec int64) int {
	return int(math.Floor(s.rate*float64(sec+1)) - math.Floor(s.rate*float64(sec)))
}

func (s *schedule) at(sec int64) *slot {
	sl := &s.slots[sec%int64(len(s.slots))]
	if sl.sec != sec {
		*sl = slot{sec: sec}
	}
	return sl
}

// pending is the backlog at now: the clients told to come back within
// the next max seconds, from the lo-th on.
func (s *schedule) pending(now time.Time, lo int64) int {
	base, n := now.Unix(), 0
	for i := lo; i <= s.max; i++ {
		n += s.at(base + i).n
	}
	return n
}

// window returns the last second (relative to now, whole seconds) of
// the window a refusal at now draws from, the earliest being lo: the
// seconds from lo whose capacity holds windowSlack × (backlog + 1),
// bounded by max.
func (s *schedule) window(now time.Time, lo int64) int64 {
	base := now.Unix()
	need := windowSlack * float64(s.pending(now, lo)+1)
	room := 0
	for i := lo; i <= s.max; i++ {
		room += s.capacity(base + i)
		if float64(room) >= need {
			return i
		}
	}
	return s.max
}

// reserve draws the whole seconds after which a client refused at now
// is to come back, at least lo (itself at least 1): uniformly among the
// free places of the window, each free place of each second equally
// likely, and counts the client in it. When the window has no free place
// left (the backlog is more than max seconds of the rate) it draws
// uniformly over [lo, max] — full jitter over the longest window — and
// the client still counts, so the pressure stays visible.
func (s *schedule) reserve(now time.Time, lo int64, rnd func() float64) int64 {
	lo = min(max(lo, 1), s.max)
	base := now.Unix()
	hi := s.window(now, lo)
	free := 0
	for i := lo; i <= hi; i++ {
		free += max(s.capacity(base+i)-s.at(base+i).n, 0)
	}
	pick := lo
	if free == 0 {
		pick = lo + min(int64(rnd()*float64(s.max-lo+1)), s.max-lo)
	} else {
		k := min(int(rnd()*float64(free)), free-1)
		for i := lo; i <= hi; i++ {
			f := max(s.capacity(base+i)-s.at(base+i).n, 0)
			if k < f {
				pick = i
				break
			}
			k -= f
		}
	}
	s.at(base+pick).n++
	return pick
}
