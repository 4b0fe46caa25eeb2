package actions

import (
	"context"
	"iter"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Unreachable is the control plane when it could not be reached: every
// call returns err. A Service over it runs its normal path, which journals
// each attempt that fails on the control plane; with a journal.Writer
// without a store, the entries wait in the local pending file for
// `journal sync`.
func Unreachable(err error) ControlPlane { return unreachable{err} }

type unreachable struct{ err error }

var _ ControlPlane = unreachable{}

func (u unreachable) Get(context.Context, lever.Kind, string) (*lever.Lever, int64, string, error) {
	return nil, 0, "", u.err
}

func (u unreachable) Levers(context.Context) ([]lever.Lever, error) { return nil, u.err }

func (u unreachable) Apply(context.Context, controlplane.ApplyRequest) (controlplane.Result, error) {
	return controlplane.Result{}, u.err
}

func (u unreachable) Release(context.Context, controlplane.ReleaseRequest) (controlplane.Result, error) {
	return controlplane.Result{}, u.err
}

func (u unreachable) Extend(context.Context, controlplane.ExtendRequest) (controlplane.Result, error) {
	return controlplane.Result{}, u.err
}

func (u unreachable) Snapshot(context.Context, controlplane.SnapshotRequest) (*controlplane.Snapshot, error) {
	return nil, u.err
}

func (u unreachable) SwapRecord(context.Context, string, string, string, string, journal.Entry) (journal.Entry, error) {
	return journal.Entry{}, u.err
}

func (u unreachable) Record(context.Context, string, string) (string, error) { return "", u.err }

func (u unreachable) Records(context.Context, string) (map[string]string, error) { return nil, u.err }

func (u unreachable) Journal(context.Context) iter.Seq2[journal.Entry, error] {
	return func(yield func(journal.Entry, error) bool) { yield(journal.Entry{}, u.err) }
}

func (u unreachable) Identity(context.Context) (controlplane.Identity, error) {
	return controlplane.Identity{}, u.err
}
