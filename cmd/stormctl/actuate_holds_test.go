package main

import (
	"testing"

	"github.com/stormctl/stormctl/controlplane"
)

// "seen by" adds what the actuators hold changed for the lever, by kind,
// summed over replicas; nothing when they hold nothing.
func TestActuatorHolds(t *testing.T) {
	sts := []controlplane.ComponentStatus{
		{Holds: map[string]map[string]int{"retries:checkout->payments": {"service": 1, "httproute": 2}}},
		{Holds: map[string]map[string]int{"retries:checkout->payments": {"httproute": 1}, "autoscaling:checkout": {"hpa": 3}}},
	}
	if got := actuatorHolds(sts, "retries:checkout->payments"); got != " (3 httproute, 1 service)" {
		t.Errorf("got %q", got)
	}
	if got := actuatorHolds(sts, "retries:search"); got != "" {
		t.Errorf("a lever no actuator holds: %q", got)
	}
}
