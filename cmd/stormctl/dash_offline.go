package main

import (
	"context"
	"time"

	"github.com/stormctl/stormctl/actions"
)

// offlineActions is the dashboard's action service while the control plane
// could not be reached at start: nothing can be planned or applied, but
// each attempt is recorded in the local pending file, as the CLI records
// its own, and the dialog says why it failed.
type offlineActions struct {
	journal actions.Journal
	actor   string
	cause   error
}

func (o offlineActions) spec(s actions.Spec) actions.Spec {
	if s.Actor == "" {
		s.Actor = o.actor
	}
	return s
}

// Plan records the plan and returns why it could not run.
func (o offlineActions) Plan(ctx context.Context, spec actions.Spec) (*actions.Result, error) {
	return nil, actions.RecordUnreachablePlan(ctx, o.journal, o.spec(spec), o.cause)
}

// Apply records the attempt and returns why it could not run.
func (o offlineActions) Apply(ctx context.Context, spec actions.Spec) (*actions.Result, error) {
	return nil, actions.RecordUnreachable(ctx, o.journal, o.spec(spec), o.cause)
}

// Release returns why it cannot run: there is no lever to read.
func (o offlineActions) Release(context.Context, string, string, string) (*actions.Result, error) {
	return nil, o.cause
}

// Extend returns why it cannot run.
func (o offlineActions) Extend(context.Context, string, string, string, time.Duration) (*actions.Result, error) {
	return nil, o.cause
}

// Approvals returns why they cannot be read.
func (o offlineActions) Approvals(context.Context) ([]actions.Approval, error) { return nil, o.cause }
