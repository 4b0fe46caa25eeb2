package lab

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/lab/sim"
)

// Clock is the lab's present for a dashboard: the simulated time and where
// the scenario's faults stand, e.g. "lab 0:40 · payment-gateway fault in
// 1:20", so a newcomer knows how long to wait and when the storm began.
func (l *Lab) Clock() string { return ClockText(l.Sim.Scenario(), l.Sim.Now()) }

// ClockText is Clock for scenario sc at simulated time now. It names the
// next fault to start, else the one under way, else how long ago the last
// one ended.
func ClockText(sc *sim.Scenario, now time.Duration) string {
	s := "lab " + mmss(now)
	var next, active, ended *sim.Fault
	for i := range sc.Faults {
		f := &sc.Faults[i]
		start, end := f.At.D(), f.At.D()+f.For.D()
		switch {
		case now < start:
			if next == nil || start < next.At.D() {
				next = f
			}
		case now < end:
			active = f
		case ended == nil || end > ended.At.D()+ended.For.D():
			ended = f
		}
	}
	switch {
	case active != nil:
		return fmt.Sprintf("%s · %s fault for %s more", s, sanitize.Mask(active.Dependency, '?'), mmss(ceilSecond(active.At.D()+active.For.D()-now)))
	case next != nil:
		return fmt.Sprintf("%s · %s fault in %s", s, sanitize.Mask(next.Dependency, '?'), mmss(ceilSecond(next.At.D()-now)))
	case ended != nil:
		return fmt.Sprintf("%s · %s fault ended %s ago", s, sanitize.Mask(ended.Dependency, '?'), mmss(now-ended.At.D()-ended.For.D()))
	}
	return s + " · no fault"
}

// mmss writes d as m:ss, rounded down to the second.
func mmss(d time.Duration) string {
	d = max(0, d).Truncate(time.Second)
	return fmt.Sprintf("%d:%02d", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// ceilSecond rounds a countdown up, so that it reads 0:00 only when the
// moment has come, as the elapsed clock beside it (rounded down) does.
func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r > 0 {
		d += time.Second - r
	}
	return d
}
