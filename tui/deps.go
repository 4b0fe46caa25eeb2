// Package tui is stormctl's incident dashboard: signal panels with
// thresholds and sparklines, the levers held and who has seen them, the
// playbook's steps, the live journal, and a guarded action dialog. It
// reaches Prometheus, Redis, the guards and the playbook runner only
// through the small interfaces below, from commands: I/O never runs in
// Update, so a slow server never freezes a key.
package tui

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
)

// Querier evaluates the panels' queries; *queries.Runner is one (one
// evaluation in flight per key, bounded, backing off with jitter).
type Querier interface {
	RunAll(ctx context.Context, reqs []queries.Request) []queries.Result
}

// Store is the control plane as the dashboard reads it;
// *controlplane.Store is one.
type Store interface {
	Levers(ctx context.Context) ([]lever.Lever, error)
	Acks(ctx context.Context) (map[string]int, int, error)
	Subscribe(ctx context.Context) (<-chan lever.Change, func())
}

// Journal is the journal stream; *journal.Stream is one.
type Journal interface {
	Tail(ctx context.Context, n int64) ([]journal.Record, error)
	Follow(ctx context.Context, after string) iter.Seq2[journal.Record, error]
}

// Actions pulls levers through every guard; *actions.Service is one. The
// service's Confirmer must be a TypedConfirmer, so that what the
// responder typed in the dialog reaches the confirmation guard.
type Actions interface {
	Plan(ctx context.Context, spec actions.Spec) (*actions.Result, error)
	Apply(ctx context.Context, spec actions.Spec) (*actions.Result, error)
	Release(ctx context.Context, id, actor, reason string) (*actions.Result, error)
	Extend(ctx context.Context, id, actor, reason string, ttl time.Duration) (*actions.Result, error)
	Approvals(ctx context.Context) ([]actions.Approval, error)
}

// Playbook runs one playbook step by step; *playbooks.Run is one. The
// dashboard calls it from one command at a time.
type Playbook interface {
	Playbook() *playbooks.Playbook
	Steps() []playbooks.StepState
	Next() *playbooks.Step
	Plan(ctx context.Context, id string, in playbooks.Input) (*playbooks.LeverResult, error)
	RunStep(ctx context.Context, id string, in playbooks.Input) (playbooks.StepState, error)
	Skips(id string) bool
}

// Deps are the dashboard's connections; a nil one is shown as not
// configured and its sections stay empty.
type Deps struct {
	Querier  Querier
	Store    Store
	Journal  Journal
	Actions  Actions // nil in read-only mode
	Playbook Playbook
	Report   Reporter    // nil: no report key
	Loss     LossChecker // nil: no journal-loss banner
	// Alerts and Autopilot feed the alerts section; both nil: none.
	Alerts    AlertSource
	Autopilot AutopilotSource
}

type typedKey struct{}

// WithTyped carries what the responder typed to confirm an action.
func WithTyped(ctx context.Context, typed string) context.Context {
	return context.WithValue(ctx, typedKey{}, typed)
}

// TypedConfirmer is the actions.Confirmer of the dashboard: the
// confirmation guard compares the target with what was typed in the
// dialog (carried in the context by WithTyped), so the journal records
// what the responder typed.
type TypedConfirmer struct{}

var _ actions.Confirmer = TypedConfirmer{}

// Confirm implements actions.Confirmer.
func (TypedConfirmer) Confirm(ctx context.Context, _, want string) (bool, error) {
	typed, ok := ctx.Value(typedKey{}).(string)
	if !ok {
		return false, errors.New("nothing was typed to confirm")
	}
	return typed == want, nil
}

// lockedPlaybook serialises calls to a Playbook, which is not safe for
// concurrent use; Update never calls it, only commands do.
type lockedPlaybook struct {
	mu sync.Mutex
	p  Playbook
}

type stepsSnapshot struct {
	steps []playbooks.StepState
	next  string
}

func (l *lockedPlaybook) snapshot() stepsSnapshot {
	s := stepsSnapshot{steps: l.p.Steps()}
	if n := l.p.Next(); n != nil {
		s.next = n.ID
	}
	return s
}

func (l *lockedPlaybook) skips(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p.Skips(id)
}

func (l *lockedPlaybook) plan(ctx context.Context, id string, force bool) (*playbooks.LeverResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p.Plan(ctx, id, playbooks.Input{Force: force})
}

func (l *lockedPlaybook) run(ctx context.Context, id string, force bool) (playbooks.StepState, stepsSnapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.p.RunStep(ctx, id, playbooks.Input{Force: force})
	return st, l.snapshot(), err
}
