package actions

import (
	"time"

	"github.com/stormctl/stormctl/controlplane"
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
	// Replication says whether replicas confirmed this write (nil for a
	// plan or a replay, which wrote nothing).
	Replication *controlplane.Replication `json:"replication,omitempty"`
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
	Advisory string `json:"advisory,omitempty"`
	// Replicated is false when a write was not confirmed by the replicas
	// in time (exit 7), true when every write was; absent when nothing was
	// waited for (a plan, a replay, a standalone server: see Replicas).
	Replicated *bool `json:"replicated,omitempty"`
	// Replicas is how many replicas the primary had; 0 on a standalone
	// server.
	Replicas *int           `json:"replicas,omitempty"`
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

// settleReplication sums up the targets' write confirmations; an
// unconfirmed write is a *controlplane.UnreplicatedError beside the result.
func settleReplication(r *Result) error {
	var worst *controlplane.Replication
	for i, t := range r.Targets {
		rep := t.Replication
		if rep == nil {
			continue
		}
		if worst == nil || (rep.Waited && !rep.Replicated) || (!worst.Waited && rep.Waited) {
			worst = rep
		}
		if !rep.Waited {
			// Nothing was confirmed or refused: the result's replicas say
			// why (a standalone server), once.
			r.Targets[i].Replication = nil
		}
	}
	if worst == nil {
		return nil
	}
	r.Replicas = &worst.Replicas
	if !worst.Waited {
		return nil
	}
	ok := worst.Replicated
	r.Replicated = &ok
	if ok {
		return nil
	}
	return &controlplane.UnreplicatedError{Op: r.Operation + " " + r.ActionID, Replication: *worst}
}
