package admission

import (
	"testing"
	"time"
)

// An admission and its release: the path of every session that passes.
func BenchmarkAdmitRelease(b *testing.B) {
	g, err := New(Config{MaxSessions: 1 << 30, Rate: 1e9, MemoryLimit: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d := g.Admit(); !d.Admitted {
				b.Fatal(d)
			}
			g.Release()
		}
	})
}

// A refusal with its Retry-After draw, a backlog filling the whole
// window: the path of every client of a storm that does not pass.
func BenchmarkRefuse(b *testing.B) {
	g, err := New(Config{MaxSessions: 1, Rate: 500, RetryAfterMax: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	g.Admit()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d := g.Admit(); d.Admitted {
				b.Fatal(d)
			}
		}
	})
}
