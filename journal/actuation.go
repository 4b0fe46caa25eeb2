package journal

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
