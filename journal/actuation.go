package journal

import (
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// Events of actuators, which apply levers to real systems (Kubernetes
// objects) and record what they changed there.
const (
	ActuationApplied  Event = "actuation.applied"
	ActuationRestored Event = "actuation.restored"
	ActuationFailed   Event = "actuation.failed"
	// ActuationConflict records that another writer changed a field the
	// actuator had set; the actuator leaves it as that writer left it.
	ActuationConflict Event = "actuation.conflict"
)

// FieldChange is one field of an object an actuator changed: its path
// (JSON pointer) and its JSON value before and after, "null" when absent.
type FieldChange struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// isActuation says whether e records an actuator's change to a real system.
func isActuation(e Entry) bool {
	switch e.Event {
	case ActuationApplied, ActuationRestored, ActuationFailed, ActuationConflict:
		return true
	}
	return false
}

// actuationWhat is the timeline's line for an actuation:
// "**cluster applied** autoscaling `frozen` on `checkout`: hpa/checkout in shop".
func actuationWhat(e Entry) string {
	verb := strings.TrimPrefix(string(e.Event), "actuation.")
	s := fmt.Sprintf("**cluster %s** %s", verb, e.Kind)
	if e.Value != "" {
		s += fmt.Sprintf(" `%s`", e.Value)
	}
	s += fmt.Sprintf(" on `%s`", e.Target)
	if e.Object != "" {
		s += ": " + e.Object
	}
	return s
}

// changesText lists the fields an actuation changed, "path: before → after",
// with format and control characters from the cluster escaped.
func changesText(cs []FieldChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %s → %s", sanitize.Line(c.Path), sanitize.Line(c.Before), sanitize.Line(c.After))
	}
	return strings.Join(parts, "; ")
}
