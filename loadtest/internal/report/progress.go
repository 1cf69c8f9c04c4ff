package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ProgressField is one named count on the progress line. Each scenario
// names its own: sent and delivered for a load run, accepted and 429 for
// a handshake storm, opened and closed for idle sessions.
type ProgressField struct {
	Name  string // what is counted
	Value int64  // the count so far
}

// Progress prints the progress line once a second. On a terminal the line
// is rewritten in place with \r; anywhere else (a file, a pipe, CI) each
// update is a line of its own, so a log reads top to bottom.
type Progress struct {
	w     io.Writer // nil: silent
	tty   bool
	start time.Time
	wrote bool
}

// NewProgress returns the progress printer of a run that starts at start;
// quiet (tests) or a nil w silences it.
func NewProgress(w io.Writer, start time.Time, quiet bool) *Progress {
	if quiet || w == nil {
		return &Progress{start: start}
	}
	return &Progress{w: w, tty: isTerminal(w), start: start}
}

// isTerminal reports whether w is a character device such as a terminal.
// A Go program cannot tell a terminal from /dev/null this way, which does
// not matter here: nobody reads /dev/null.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// line prints one progress update.
func (p *Progress) line(now time.Time, fields ...ProgressField) {
	if p.w == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%7.1fs", now.Sub(p.start).Seconds())
	for _, f := range fields {
		fmt.Fprintf(&b, "  %s %d", f.Name, f.Value)
	}
	if p.tty {
		// Trailing spaces cover a longer previous line.
		fmt.Fprintf(p.w, "\r%s   ", b.String())
	} else {
		fmt.Fprintln(p.w, b.String())
	}
	p.wrote = true
}

// End finishes a rewritten line so the report starts on a fresh one.
func (p *Progress) End() {
	if p.w != nil && p.tty && p.wrote {
		fmt.Fprintln(p.w)
	}
}

// Sampled is a per-second series fed by the sampler.
type Sampled interface {
	sample(dt time.Duration)
}

// Sampler is the once-a-second loop every scenario runs while its load
// is on: it samples the per-second series, does the scenario's own
// per-second work and prints the progress line with the scenario's
// fields.
type Sampler struct {
	Prog   *Progress // prints the line
	Series []Sampled // sampled once a second, before the line
	// Fields returns the progress line's counts.
	Fields func() []ProgressField
	// Each, when set, runs once a second after the series are sampled
	// (the throughput window's forgiveness tick).
	Each func()
	// last is when the series were last sampled; loop owns it until it
	// returns.
	last time.Time
}

// Flush samples the part of a second since the last tick, for a run
// that ended between ticks (a handshake storm that finished early); call
// it after loop returned.
func (s *Sampler) Flush(now time.Time) {
	if s.last.IsZero() || now.Sub(s.last) < 100*time.Millisecond {
		return
	}
	for _, ss := range s.Series {
		ss.sample(now.Sub(s.last))
	}
	s.last = now
}

// Show prints the progress line as of now.
func (s *Sampler) Show(now time.Time) { s.Prog.line(now, s.Fields()...) }

// Loop waits until start and then ticks once a second until a tick at or
// after end (a zero end: no end), stop closes or ctx ends. It reports
// whether ctx ended it and when it stopped.
func (s *Sampler) Loop(ctx context.Context, start, end time.Time, stop <-chan struct{}) (interrupted bool, at time.Time) {
	select {
	case <-ctx.Done():
		return true, time.Now()
	case <-stop:
		return false, time.Now()
	case <-time.After(time.Until(start)):
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	s.last = start
	for {
		select {
		case <-ctx.Done():
			return true, time.Now()
		case <-stop:
			return false, time.Now()
		case now := <-tick.C:
			for _, ss := range s.Series {
				ss.sample(now.Sub(s.last))
			}
			s.last = now
			if s.Each != nil {
				s.Each()
			}
			s.Show(now)
			if !end.IsZero() && !now.Before(end) {
				return false, now
			}
		}
	}
}
