package actions

import (
	"context"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
)

// Annotated returns a copy of the service whose every journal entry — those
// it appends itself (planned, refused) and those the control plane appends
// atomically with a lever write (applied, released, extended, approvals) —
// passes through annotate first. Playbooks use it to attribute an action's
// entries to their step.
func (s *Service) Annotated(annotate func(*journal.Entry)) *Service {
	c := *s
	c.Journal = annotatedJournal{Journal: s.Journal, annotate: annotate}
	c.Store = annotatedPlane{ControlPlane: s.Store, annotate: annotate}
	return &c
}

type annotatedJournal struct {
	Journal
	annotate func(*journal.Entry)
}

func (j annotatedJournal) Append(ctx context.Context, e journal.Entry) (journal.Entry, bool, error) {
	j.annotate(&e)
	return j.Journal.Append(ctx, e)
}

type annotatedPlane struct {
	ControlPlane
	annotate func(*journal.Entry)
}

func (p annotatedPlane) Apply(ctx context.Context, r controlplane.ApplyRequest) (controlplane.Result, error) {
	p.annotate(&r.Entry)
	return p.ControlPlane.Apply(ctx, r)
}

func (p annotatedPlane) Release(ctx context.Context, r controlplane.ReleaseRequest) (controlplane.Result, error) {
	p.annotate(&r.Entry)
	return p.ControlPlane.Release(ctx, r)
}

func (p annotatedPlane) Extend(ctx context.Context, r controlplane.ExtendRequest) (controlplane.Result, error) {
	p.annotate(&r.Entry)
	return p.ControlPlane.Extend(ctx, r)
}

func (p annotatedPlane) SwapRecord(ctx context.Context, collection, id, old, value string, e journal.Entry) (journal.Entry, error) {
	p.annotate(&e)
	return p.ControlPlane.SwapRecord(ctx, collection, id, old, value, e)
}
