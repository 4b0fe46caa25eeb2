package lab

import (
	"testing"
	"time"

	"github.com/stormctl/stormctl/lab/sim"
)

// The header counts down to the fault and through it, rounding the
// countdown up so that it never reads 0:00 while the moment is still to
// come, and names a hostile dependency without its control characters.
func TestClockText(t *testing.T) {
	sc, err := sim.Find("gateway-blip")
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	for _, c := range []struct {
		now  time.Duration
		want string
	}{
		{0, "lab 0:00 · payment-gateway fault in 2:00"},
		{40 * time.Second, "lab 0:40 · payment-gateway fault in 1:20"},
		{2*time.Minute - 300*ms, "lab 1:59 · payment-gateway fault in 0:01"},
		{2 * time.Minute, "lab 2:00 · payment-gateway fault for 0:40 more"},
		{2*time.Minute + 39*time.Second + 500*ms, "lab 2:39 · payment-gateway fault for 0:01 more"},
		{2*time.Minute + 40*time.Second, "lab 2:40 · payment-gateway fault ended 0:00 ago"},
		{5 * time.Minute, "lab 5:00 · payment-gateway fault ended 2:20 ago"},
	} {
		if got := ClockText(sc, c.now); got != c.want {
			t.Errorf("at %s: %q, want %q", c.now, got, c.want)
		}
	}
	hostile := *sc
	hostile.Faults = []sim.Fault{{Dependency: "gate\x1b[2Jway", At: sc.Faults[0].At, For: sc.Faults[0].For}}
	if got := ClockText(&hostile, 0); got != "lab 0:00 · gate?[2Jway fault in 2:00" {
		t.Errorf("hostile name: %q", got)
	}
	if got := ClockText(&sim.Scenario{}, time.Minute); got != "lab 1:00 · no fault" {
		t.Errorf("no faults: %q", got)
	}
}
