package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// held finds the active levers of action id, or explains why there are none.
func (s *Service) heldBy(ctx context.Context, id string) ([]lever.Lever, error) {
	levers, err := s.Store.Levers(ctx)
	if err != nil {
		return nil, err
	}
	var mine []lever.Lever
	for _, l := range levers {
		if l.ActionID == id {
			mine = append(mine, l)
		}
	}
	if len(mine) > 0 {
		return mine, nil
	}
	for _, l := range levers {
		for p := l.Previous; p != nil; p = p.Previous {
			if p.ActionID == id {
				return nil, &NotFoundError{What: "action", ID: id, Detail: fmt.Sprintf(
					"it was superseded on %s %s by action %s; release that one to restore it", l.Kind, l.Target, l.ActionID)}
			}
		}
	}
	return nil, &NotFoundError{What: "action", ID: id, Detail: "it expired, was released, or never applied; see `stormctl action list --all`"}
}

// ChangeOptions are the answers of the person who releases or extends.
type ChangeOptions struct {
	// Confirm asks for confirmation as apply does: Yes (a script), else
	// Service.Confirm (a terminal), else refused. Callers with a
	// confirmation of their own (the dashboard) and automation leave it
	// false.
	Confirm, Yes bool
	// Shorten lets extend move the expiry earlier (journaled with the
	// outcome "shortened"); without it a shorter expiry is refused.
	Shorten bool
	// Restores names the lost entry this change re-applies (journal sync).
	Restores *journal.Restored
}

// Release undoes action id: each of its levers is removed, or restored to
// the lever it superseded if that has not expired. The actor's role must
// allow the kind and a reason is required, as for apply. Releasing is never
// rate limited: it is the way back to normal.
func (s *Service) Release(ctx context.Context, id, actor, reason string) (*Result, error) {
	return s.ReleaseWith(ctx, id, actor, reason, ChangeOptions{})
}

// ReleaseWith is Release with a person's options.
func (s *Service) ReleaseWith(ctx context.Context, id, actor, reason string, o ChangeOptions) (*Result, error) {
	return s.change(ctx, "release", id, actor, reason, 0, o)
}

// Extend sets the expiry of action id's levers to now + ttl, within the
// kind's maximum TTL and never earlier than it is; a reason is required.
func (s *Service) Extend(ctx context.Context, id, actor, reason string, ttl time.Duration) (*Result, error) {
	return s.ExtendWith(ctx, id, actor, reason, ttl, ChangeOptions{})
}

// ExtendWith is Extend with a person's options.
func (s *Service) ExtendWith(ctx context.Context, id, actor, reason string, ttl time.Duration, o ChangeOptions) (*Result, error) {
	return s.change(ctx, "extend", id, actor, reason, ttl, o)
}

func (s *Service) change(ctx context.Context, op, id, actor, reason string, ttl time.Duration, o ChangeOptions) (*Result, error) {
	levers, err := s.heldBy(ctx, id)
	if err != nil {
		return nil, err
	}
	first := levers[0]
	a := s.begin(Spec{Kind: string(first.Kind), Target: first.Target, Value: first.Value, Reason: reason, Actor: actor, TTL: ttl, Restores: o.Restores}, modeApply)
	a.id, a.incident, a.leverActor = id, first.Incident, first.Actor
	a.targets = nil
	for _, l := range levers {
		a.targets = append(a.targets, Target{Name: l.Target})
	}
	checks := []guard{{GuardPolicy, func(context.Context) (verdict, error) {
		if !s.Policy.Allows(actor, first.Kind) {
			return refusal("ask someone whose role may", "%s (role %s) may not %s %s levers", actor, s.Policy.Role(actor), op, first.Kind), nil
		}
		return pass("%s is %s", actor, s.Policy.Role(actor)), nil
	}}, {GuardReason, func(context.Context) (verdict, error) {
		// Like apply: the record says why the lever changed.
		if strings.TrimSpace(reason) == "" {
			return refusal(fmt.Sprintf(`say why, e.g. --reason "amplification back under 1.2x" (stormctl action %s %s --reason ...)`, op, id), "a reason is required"), nil
		}
		return pass("%q", reason), nil
	}}}
	if op == "extend" {
		checks = append(checks, guard{GuardTTL, a.ttl}, guard{GuardTTL, func(context.Context) (verdict, error) {
			return s.neverShorter(levers, ttl, o.Shorten, id), nil
		}})
	}
	if o.Confirm {
		checks = append(checks, guard{GuardConfirmation, func(ctx context.Context) (verdict, error) {
			return s.confirmChange(ctx, op, id, levers, ttl, o.Yes)
		}})
	}
	for _, g := range checks {
		v, _ := g.check(ctx)
		if v.refuse != nil {
			v.refuse.Guard = g.name
			a.guards = append(a.guards, GuardResult{Guard: g.name, Status: StatusRefused, Detail: v.refuse.Reason})
			return nil, a.journalRefusal(ctx, v.refuse)
		}
		a.guards = append(a.guards, GuardResult{Guard: g.name, Status: v.status, Detail: v.detail})
	}
	res := &Result{Operation: op, ActionID: id, Kind: first.Kind, Value: first.Value, Actor: actor, Reason: a.spec.Reason,
		Incident: first.Incident, TTL: journal.Duration(ttl), Guards: a.guards}
	for _, l := range levers {
		e := journal.Entry{Actor: actor, Reason: a.spec.Reason, ActionID: id, Incident: l.Incident, TTL: journal.Duration(ttl), Restores: o.Restores}
		var r controlplane.Result
		if op == "extend" {
			exp := s.Clock.Now().Add(ttl)
			res.ExpiresAt = &exp
			r, err = s.Store.Extend(ctx, controlplane.ExtendRequest{Current: &l, ExpiresAt: exp, Entry: e})
		} else {
			r, err = s.Store.Release(ctx, controlplane.ReleaseRequest{Current: &l, Entry: e})
		}
		if err != nil {
			return res, err
		}
		res.Targets = append(res.Targets, TargetResult{Target: l.Target, Before: &l, After: r.Lever, Version: r.Version, JournalEntry: r.Entry.ID, Replication: r.Replication})
	}
	return res, settleReplication(res)
}

// neverShorter refuses an extend that would move any lever's expiry
// earlier, unless shorten says that is the point.
func (s *Service) neverShorter(levers []lever.Lever, ttl time.Duration, shorten bool, id string) verdict {
	exp := s.Clock.Now().Add(ttl)
	for _, l := range levers {
		if !exp.Before(l.ExpiresAt) {
			continue
		}
		left := l.ExpiresAt.Sub(s.Clock.Now()).Round(time.Second)
		if shorten {
			return pass("shortened from %s left to %s, as asked (--shorten)", left, ttl)
		}
		return refusal(fmt.Sprintf("to end it sooner pass --shorten (journaled as shortened) or release it: stormctl action release %s", id),
			"--ttl %s would shorten %s %s from %s left to %s; extend never shortens", ttl, l.Kind, l.Target, left, ttl)
	}
	return pass("expiry moves later")
}

// confirmChange asks, as apply does, before a release or an extend.
func (s *Service) confirmChange(ctx context.Context, op, id string, levers []lever.Lever, ttl time.Duration, yes bool) (verdict, error) {
	names := make([]string, len(levers))
	for i, l := range levers {
		names[i] = l.Target
	}
	want := strings.Join(names, ",")
	switch {
	case yes:
		return pass("--yes"), nil
	case s.Confirm == nil:
		return refusal("pass --yes to confirm in a script", "no terminal to confirm on"), nil
	}
	what := fmt.Sprintf("Release %s=%s on %s (action %s)", levers[0].Kind, levers[0].Value, want, id)
	if op == "extend" {
		what = fmt.Sprintf("Set %s=%s on %s to expire in %s (action %s)", levers[0].Kind, levers[0].Value, want, ttl, id)
	}
	ok, err := s.Confirm.Confirm(ctx, fmt.Sprintf("%s? Type %q to confirm: ", what, want), want)
	if err != nil {
		return refusal("pass --yes to confirm in a script", "confirmation failed: %v", err), nil
	}
	if !ok {
		return refusal("type the target exactly, or pass --yes", "the confirmation did not match %q", want), nil
	}
	return pass("typed %q", want), nil
}
