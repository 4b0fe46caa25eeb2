package actions

import (
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Guard statuses in a Result.
const (
	StatusPassed   = "passed"
	StatusRefused  = "refused"
	StatusForced   = "forced"    // evidence missing, overridden with --force
	StatusPending  = "pending"   // needs a second person
	StatusSkipped  = "skipped"   // not evaluated: an earlier guard made it meaningless
	StatusNotAsked = "not-asked" // confirmation, in a plan
	StatusReplayed = "replayed"  // idempotency key: the first result
)

// GuardResult is one guard's verdict.
type GuardResult struct {
	Guard  string `json:"guard"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// TargetResult is what an action did (or, in a plan, would do) to one lever.
type TargetResult struct {
	Target string `json:"target"`
	// Before and After are the lever before and after; nil is absent
	// (normal operation).
	Before   *lever.Lever       `json:"before"`
	After    *lever.Lever       `json:"after"`
	Version  int64              `json:"version,omitempty"`
	Evidence []journal.Evidence `json:"evidence,omitempty"`
	// JournalEntry is the id of the entry that recorded this target.
	JournalEntry string `json:"journal_entry,omitempty"`
	Replayed     bool   `json:"replayed,omitempty"`
}

// Result is the stable outcome of plan, apply, request, approve, release
// and extend, as `-o json` prints it.
type Result struct {
	Operation  string           `json:"operation"` // plan, apply, request, approve, release, extend
	ActionID   string           `json:"action_id"`
	RequestID  string           `json:"request_id,omitempty"`
	Kind       Kind             `json:"kind"`
	Value      string           `json:"value"`
	Actor      string           `json:"actor"`
	ApprovedBy string           `json:"approved_by,omitempty"`
	Reason     string           `json:"reason"`
	Incident   string           `json:"incident,omitempty"`
	TTL        journal.Duration `json:"ttl,omitempty"`
	ExpiresAt  *time.Time       `json:"expires_at,omitempty"`
	Forced     bool             `json:"forced"`
	// Unverified names what --force let through that neither Prometheus,
	// the cached label values nor a lever in Redis could confirm.
	Unverified []string `json:"unverified,omitempty"`
	Replayed   bool     `json:"replayed"`
	// Advisory is set when the actor is not bound by Redis (one shared
	// user): it says that roles and approvals are advisory, and how to
	// give each person a Redis user.
	Advisory string         `json:"advisory,omitempty"`
	Guards   []GuardResult  `json:"guards"`
	Targets  []TargetResult `json:"targets"`
}

// stateOf is the journal's view of a lever.
func stateOf(l *lever.Lever) *journal.LeverState {
	if l == nil {
		return nil
	}
	return &journal.LeverState{Value: l.Value, ActionID: l.ActionID, Actor: l.Actor, Reason: l.Reason, Incident: l.Incident,
		CreatedAt: l.CreatedAt.UTC(), ExpiresAt: l.ExpiresAt.UTC(), Version: l.Version}
}
