package handshake

import (
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Refusal summaries. A reconnect storm is thousands of 429s a second; a
// log line each would drown the log and cost more than the refusals. The
// middleware counts refusals per client IP and writes one line per
// interval instead: how many, from how many addresses, and the busiest
// few.
const (
	// refusalLogInterval is how often a summary line may be written.
	refusalLogInterval = 10 * time.Second
	// refusalLogMaxIPs bounds the addresses counted in one interval; the
	// rest are counted together, so a storm from many addresses costs a
	// bounded map.
	refusalLogMaxIPs = 1024
	// refusalLogTop is how many of the busiest addresses a line names.
	refusalLogTop = 5
)

// refusalLog gathers refusals between summary lines. The line for an
// interval is written by the first refusal after it ended (no goroutine
// of its own), so a quiet server writes nothing.
type refusalLog struct {
	logger *slog.Logger
	now    func() time.Time

	// mu guards the fields below.
	mu     sync.Mutex
	start  time.Time      // the interval's start; zero: nothing counted
	byIP   map[string]int // refusals per address this interval
	others int            // refusals from addresses past refusalLogMaxIPs
	total  int
}

// refused counts one refusal of key and writes the previous interval's
// summary when it is over.
func (l *refusalLog) refused(key string) {
	now := l.now()
	l.mu.Lock()
	var line []any
	if !l.start.IsZero() && now.Sub(l.start) >= refusalLogInterval {
		line = l.summaryLocked(now)
	}
	if l.start.IsZero() {
		l.start = now
		l.byIP = make(map[string]int)
	}
	l.total++
	if _, ok := l.byIP[key]; ok || len(l.byIP) < refusalLogMaxIPs {
		l.byIP[key]++
	} else {
		l.others++
	}
	l.mu.Unlock()
	if line != nil {
		l.logger.Warn("handshakes refused", line...)
	}
}

// summaryLocked returns the attributes of the interval's line and starts
// the next interval empty.
func (l *refusalLog) summaryLocked(now time.Time) []any {
	type count struct {
		ip string
		n  int
	}
	top := make([]count, 0, len(l.byIP))
	for ip, n := range l.byIP {
		top = append(top, count{ip, n})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n || top[i].n == top[j].n && top[i].ip < top[j].ip })
	var b strings.Builder
	for i, c := range top[:min(len(top), refusalLogTop)] {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.ip + "=" + strconv.Itoa(c.n))
	}
	line := []any{
		"refused", l.total,
		"addresses", len(l.byIP) + min(l.others, 1),
		"over", now.Sub(l.start).Round(time.Second),
		"top", b.String(),
	}
	l.start, l.byIP, l.others, l.total = time.Time{}, nil, 0, 0
	return line
}
