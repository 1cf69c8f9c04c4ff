package main

import "github.com/stompgate/stompgate/internal/procs"

// procsPolicy is -adaptive-procs' policy for up to most processors, with
// -adaptive-procs-hold and -adaptive-procs-wait in force.
func (s *settings) procsPolicy(most int) procs.Policy {
	p := procs.Default(most)
	p.Hold = int(s.procsHold / procs.DefaultTick)
	p.Wait = s.procsWait
	if s.procsWait == 0 {
		p.Check = 0
	}
	return p
}
