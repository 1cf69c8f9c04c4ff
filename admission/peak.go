package admission

import "time"

// PeakWindow is the width of the window over which the Gate counts its
// busiest moment (State.PeakAdmitted): a tenth of a second, the
// granularity at which a reconnect storm's arrivals are judged. Over
// any PeakWindow the bucket admits at most Rate × PeakWindow + Burst.
const PeakWindow = 100 * time.Millisecond

// peakRingSize is how many admission instants the peak tracker keeps,
// and so the highest peak it can tell apart: four thousand sessions in
// a tenth of a second is more than an instance's bucket lets through
// at any rate a machine sustains, so a peak that reaches it says "at
// least" and nothing is lost that a reader needs. 4,096 instants are
// 96 KiB, once per process.
const peakRingSize = 4096

// peakTracker keeps the most admitting decisions within any
// PeakWindow. It is guarded by the Gate's mutex.
type peakTracker struct {
	ring [peakRingSize]time.Time // the last admissions' instants, ring[n%size] next
	n    int                     // admissions recorded
	peak int                     // most admissions in any window so far
}

// record counts one admission at now and raises the peak when the
// window ending at now holds more than it. The peak only grows, so the
// loop runs once per unit of growth: O(1) amortised.
func (p *peakTracker) record(now time.Time) {
	if p.n > 0 {
		// Instants are kept in order: one older than the last counts
		// at the last.
		if last := p.ring[(p.n-1)%peakRingSize]; now.Before(last) {
			now = last
		}
	}
	p.ring[p.n%peakRingSize] = now
	p.n++
	for p.peak < p.n && p.peak < peakRingSize {
		// The (peak+1)-th most recent admission: when it lies within
		// the window ending now, the window holds peak+1.
		if now.Sub(p.ring[(p.n-1-p.peak)%peakRingSize]) >= PeakWindow {
			return
		}
		p.peak++
	}
}
