package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// Actions pulls the lab's scheduled lever events through the control
// plane as a responder would: every guard (evidence from the lab's own
// Prometheus API), the journal, and the fleet's provider seeing the change.
type Actions struct {
	Service *actions.Service
	Actor   string
}

// Pull is what became of one scheduled lever event.
type Pull struct {
	Event  sim.LeverEvent
	Result *actions.Result
	// Err is a guard's refusal (*actions.RefusedError, journaled), or why
	// the event could not be pulled; the run goes on either way.
	Err error
}

// ActionsOptions build the actions.Service of a lab.
type ActionsOptions struct {
	Store *controlplane.Store
	// PromURL is the lab's served Prometheus API, for evidence and for the
	// inventory (the service and dependency label values).
	PromURL string
	// Policy defaults to the built-in policy; PendingPath is the local
	// journal used while the control plane is unreachable.
	Policy      *actions.Policy
	PendingPath string
}

// NewActions builds an actions.Service on the lab's control plane the way
// the CLI builds one for a context, with the lab's lever clock.
func (l *Lab) NewActions(o ActionsOptions) (*actions.Service, error) {
	client, err := queries.NewClient(config.Prometheus{URL: o.PromURL}, func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("lab actions: %w", err)
	}
	cat, err := queries.Load()
	if err != nil {
		return nil, fmt.Errorf("lab actions: %w", err)
	}
	pol := o.Policy
	if pol == nil {
		if pol, err = actions.NewPolicy(config.Policy{}, nil); err != nil {
			return nil, fmt.Errorf("lab actions: %w", err)
		}
	}
	runner := queries.NewRunner(client, queries.RunnerOptions{})
	packFor := func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }
	return &actions.Service{
		Store:     actions.FromStore(o.Store),
		Journal:   journal.NewWriter(o.Store, o.PendingPath),
		Policy:    pol,
		Inventory: actions.NewNames(config.Inventory{}, nil, actions.PromLabels{Client: client}),
		Evidence:  &actions.QueryEvidence{Catalog: cat, Runner: runner, PackFor: packFor},
		Clock:     leverClock{l},
	}, nil
}

// leverClock is the lab's lever clock as an actions.Clock.
type leverClock struct{ l *Lab }

func (c leverClock) Now() time.Time { return c.l.leverNow() }

// pull applies or releases one event through Actions and settles it.
func (l *Lab) pull(ctx context.Context, e sim.LeverEvent) Pull {
	p := Pull{Event: e}
	a := l.Actions
	kind := lever.Kind(e.Kind)
	reason := e.Reason
	if reason == "" {
		reason = fmt.Sprintf("lab rehearsal: %s %s %s at %s", e.Kind, e.Target, e.Value, e.At.D())
	}
	if e.Value == "" {
		cur, _, _, err := a.Service.Store.Get(ctx, kind, e.Target)
		switch {
		case err != nil:
			p.Err = err
		case cur == nil:
			p.Err = fmt.Errorf("no %s lever on %s to release", e.Kind, e.Target)
		default:
			p.Result, p.Err = a.Service.Release(ctx, cur.ActionID, a.Actor, reason)
		}
	} else {
		ttl := e.TTL.D()
		if ttl == 0 {
			ttl = a.Service.Policy.MaxTTL(kind)
		}
		p.Result, p.Err = a.Service.Apply(ctx, actions.Spec{Kind: e.Kind, Target: e.Target, Value: e.Value, TTL: ttl,
			Reason: reason, Actor: a.Actor, Force: e.Force, Yes: true})
	}
	if p.Err != nil {
		return p
	}
	for _, t := range p.Result.Targets {
		if err := l.Settle(ctx, kind, t.Target, t.Version, t.After != nil); err != nil {
			p.Err = err
		}
	}
	return p
}
