package actions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// verdict is one guard's answer: refuse set means refused.
type verdict struct {
	status string
	detail string
	refuse *RefusedError
}

func pass(format string, args ...any) verdict {
	return verdict{status: StatusPassed, detail: fmt.Sprintf(format, args...)}
}

// refusal builds a guard's refusal; journalRefusal records it.
func refusal(hint, format string, args ...any) verdict {
	return verdict{refuse: &RefusedError{Reason: fmt.Sprintf(format, args...), Hint: hint}}
}

type guard struct {
	name  string
	check func(context.Context) (verdict, error)
}

// guardList is every guard in DESIGN.md's order.
func (a *attempt) guardList() []guard {
	return []guard{
		{GuardValidation, a.validate}, {GuardPolicy, a.policy}, {GuardReason, a.reason}, {GuardTTL, a.ttl},
		{GuardEvidence, a.gatherEvidence}, {GuardBlastRadius, a.blastRadius}, {GuardApproval, a.approvalGuard},
		{GuardConflict, a.conflict}, {GuardRateLimit, a.rateLimit}, {GuardConfirmation, a.confirm},
	}
}

// run evaluates the guards in order. It stops at the first refusal, except
// in a plan, which evaluates every guard that still makes sense and
// returns the first refusal. An approval that is needed stops an apply or
// a request with a.pending set. The error is a failure to evaluate (the
// control plane unreachable), not a refusal.
func (a *attempt) run(ctx context.Context) (*RefusedError, error) {
	var first *RefusedError
	gs := a.guardList()
	for i, g := range gs {
		v, err := g.check(ctx)
		if err != nil {
			return nil, err
		}
		if v.refuse != nil {
			v.refuse.Guard = g.name
			a.guards = append(a.guards, GuardResult{Guard: g.name, Status: StatusRefused, Detail: v.refuse.Reason})
			if a.mode != modePlan {
				return v.refuse, nil
			}
			if first == nil {
				first = v.refuse
			}
			if g.name == GuardValidation {
				for _, rest := range gs[i+1:] {
					a.guards = append(a.guards, GuardResult{Guard: rest.name, Status: StatusSkipped, Detail: "the action is not valid"})
				}
				return first, nil
			}
			continue
		}
		a.guards = append(a.guards, GuardResult{Guard: g.name, Status: v.status, Detail: v.detail})
		if v.status == StatusPending && a.mode != modePlan {
			return nil, nil
		}
	}
	return first, nil
}

func (a *attempt) validate(ctx context.Context) (verdict, error) {
	if v := a.checkInput("actor"); v.refuse != nil {
		return v, nil
	}
	if a.parseErr != nil {
		return refusal(a.parseHint, "%v", a.parseErr), nil
	}
	if v, err := a.attachIncident(ctx); v.refuse != nil || err != nil {
		return v, err
	}
	notes, v, err := a.checkNames(ctx)
	if v.refuse != nil || err != nil {
		return v, err
	}
	a.nameNotes = notes
	detail := fmt.Sprintf("%s=%s on %s", a.ks.Kind, a.value, strings.Join(a.names(), ", "))
	if a.incident != "" {
		detail += ", incident " + a.incident
	}
	if len(notes) > 0 {
		detail += "; " + strings.Join(notes, "; ")
	}
	return pass("%s", detail), nil
}

func targetHint(ks KindSpec) string {
	switch ks.Form {
	case lever.ServiceOnly:
		return "a " + string(ks.Kind) + " target is a service name"
	case lever.DependencyOrEdge:
		return "a " + string(ks.Kind) + " target is dependency or service->dependency"
	}
	return "a " + string(ks.Kind) + " target is service or service->dependency"
}

// attachIncident checks an explicit incident, or attaches the current one.
func (a *attempt) attachIncident(ctx context.Context) (verdict, error) {
	if a.approval != nil {
		a.incident = a.approval.Incident
		return verdict{}, nil
	}
	snap, err := a.read(ctx)
	if err != nil {
		return verdict{}, err
	}
	var incidents map[string]string // what read asked for: all, or the one named
	if len(snap.Records) > 0 {
		incidents = snap.Records[0]
	}
	if a.spec.Incident == "" {
		if cur := currentIncident(incidents); cur != nil {
			a.incident = cur.ID
		}
		return verdict{}, nil
	}
	inc, err := decodeIncident(a.spec.Incident, incidents[a.spec.Incident])
	if err != nil {
		return verdict{}, err
	}
	switch {
	case inc == nil:
		return refusal("see `stormctl incident list`", "unknown incident %q", a.spec.Incident), nil
	case !inc.IsOpen():
		return refusal("open a new one with `stormctl incident open TITLE`", "incident %s (%s) was closed at %s", inc.ID, inc.Title, inc.ClosedAt.Format("15:04:05Z07:00")), nil
	}
	a.incident = inc.ID
	return verdict{}, nil
}

func (a *attempt) policy(ctx context.Context) (verdict, error) {
	if _, err := a.identity(ctx); err != nil {
		return verdict{}, err
	}
	p, k := a.s.Policy, a.ks.Kind
	if !p.Allows(a.leverActor, k) {
		return a.withAdvisory(refusal("ask someone whose role may, or change policy.kinds in the context",
			"%s (role %s) may not use %s levers", a.leverActor, p.Role(a.leverActor), k)), nil
	}
	if a.mode == modeApprove && !p.MayApprove(a.actor, k) {
		return a.withAdvisory(refusal("ask someone whose role may approve", "%s (role %s) may not approve %s levers", a.actor, p.Role(a.actor), k)), nil
	}
	return pass("%s is %s", a.leverActor, p.Role(a.leverActor)), nil
}

func (a *attempt) reason(context.Context) (verdict, error) {
	if v := a.checkInput("reason"); v.refuse != nil {
		return v, nil
	}
	if strings.TrimSpace(a.spec.Reason) == "" {
		return refusal(`say what you saw and why this helps, e.g. --reason "amplification 4x on checkout->payments"`, "a reason is required"), nil
	}
	return pass("%q", a.spec.Reason), nil
}

// MinTTL is the shortest TTL a lever may have: pushed changes take
// milliseconds to reach every instance, and Redis expires in whole
// milliseconds, so anything shorter is a change nobody obeys.
const MinTTL = time.Second

func (a *attempt) ttl(context.Context) (verdict, error) {
	limit := a.s.Policy.MaxTTL(a.ks.Kind)
	switch {
	case a.spec.TTL == 0:
		return refusal(fmt.Sprintf("pass --ttl, at most %s for %s", limit, a.ks.Kind), "a TTL is required: every lever expires by itself"), nil
	case a.spec.TTL < 0:
		return refusal(fmt.Sprintf("pass a positive --ttl, at most %s for %s", limit, a.ks.Kind), "TTL %s is negative: it is how long the lever holds from now", a.spec.TTL), nil
	case a.spec.TTL < MinTTL:
		return refusal(fmt.Sprintf("use --ttl %s or more", MinTTL), "TTL %s is under the minimum %s: the lever would expire before the fleet could act on it", a.spec.TTL, MinTTL), nil
	case a.spec.TTL > limit:
		return refusal(fmt.Sprintf("use --ttl %s or less, and extend it later if still needed", limit), "TTL %s exceeds the maximum %s for %s levers", a.spec.TTL, limit, a.ks.Kind), nil
	}
	return pass("%s (max %s)", a.spec.TTL, limit), nil
}

// gatherEvidence measures the kind's queries for every target at once (the
// runner bounds the concurrency) and needs support for each target.
func (a *attempt) gatherEvidence(ctx context.Context) (verdict, error) {
	ids := a.s.Policy.Evidence(a.ks.Kind)
	type job struct {
		t   Target
		i   int
		ev  journal.Evidence
		err error
	}
	jobs := make([]job, 0, len(a.targets)*len(ids))
	for _, t := range a.targets {
		for i := range ids {
			jobs = append(jobs, job{t: t, i: i})
		}
	}
	mctx := ctx
	if a.spec.Force {
		// --force acts without support anyway: a Prometheus that never
		// answers must not hold the responder for the full query timeout.
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(ctx, ForceEvidenceWait)
		defer cancel()
	}
	var wg sync.WaitGroup
	for j := range jobs {
		wg.Go(func() {
			jobs[j].ev, jobs[j].err = a.s.Evidence.Measure(mctx, ids[jobs[j].i], jobs[j].t)
			if jobs[j].err != nil && a.spec.Force && mctx.Err() != nil && ctx.Err() == nil {
				jobs[j].err = fmt.Errorf("no answer within %s; --force does not wait longer", ForceEvidenceWait)
			}
			if jobs[j].ev.Query == "" {
				jobs[j].ev.Query = ids[jobs[j].i]
			}
		})
	}
	wg.Wait()
	var support, missing []string
	for _, t := range a.targets {
		var seen []string
		found := false
		for _, j := range jobs {
			if j.t.Name != t.Name {
				continue
			}
			if j.err != nil {
				seen = append(seen, fmt.Sprintf("%s: %v", j.ev.Query, j.err))
				continue
			}
			a.evidence[t.Name] = append(a.evidence[t.Name], j.ev)
			seen = append(seen, describe(j.ev))
			if Supports(j.ev.Status) && !found {
				found = true
				support = append(support, t.Name+": "+describe(j.ev))
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("%s (%s)", t.Name, strings.Join(seen, "; ")))
		}
	}
	switch {
	case len(missing) == 0:
		return pass("%s", strings.Join(support, "; ")), nil
	case a.spec.Force:
		a.forced = true
		return verdict{status: StatusForced, detail: "no supporting evidence for " + strings.Join(missing, ", ") + "; forced by " + a.actor}, nil
	}
	return refusal("act anyway with --force (journaled as forced)", "no evidence supports %s=%s on %s; it needs %s at or past its warn threshold",
		a.ks.Kind, a.value, strings.Join(missing, ", "), strings.Join(ids, " or ")), nil
}

func (a *attempt) blastRadius(context.Context) (verdict, error) {
	n, limit, want := a.total, a.s.Policy.BlastRadius(), a.spec.Targets
	switch {
	case want != 0 && want != n:
		return refusal(fmt.Sprintf("check the list and pass --targets %d", n), "--targets %d does not match the %d target(s) named", want, n), nil
	case n > limit && want != n:
		return refusal(fmt.Sprintf("confirm the count with --targets %d", n), "the action names %d targets, more than the blast radius of %d", n, limit), nil
	}
	return pass("%d target(s), limit %d", n, limit), nil
}

func (a *attempt) approvalGuard(ctx context.Context) (verdict, error) {
	switch {
	case a.mode == modeApprove && a.actor == a.leverActor:
		return a.withAdvisory(refusal("a different person must approve", "%s may not approve their own request %s", a.actor, a.approval.ID)), nil
	case a.mode == modeApprove:
		id, err := a.identity(ctx)
		if err != nil {
			return verdict{}, err
		}
		if v := a.sameRedisUser(id); v.refuse != nil {
			return v, nil
		}
		if adv := a.advisory(); adv != "" {
			return pass("approved by %s (request %s); %s", a.actor, a.approval.ID, adv), nil
		}
		return pass("approved by %s as Redis user %s (request %s by Redis user %s)", a.actor, id.User, a.approval.ID, a.approval.RequesterUser), nil
	case a.mode == modeRequest || a.s.Policy.NeedsApproval(a.ks.Kind):
		a.pending = true
		return verdict{status: StatusPending, detail: "needs approval by a second person"}, nil
	}
	return pass("not required for %s", a.ks.Kind), nil
}

func (a *attempt) conflict(ctx context.Context) (verdict, error) {
	snap, err := a.read(ctx)
	if err != nil {
		return verdict{}, err
	}
	var replaced []string
	for _, t := range a.targets {
		lr := snap.Levers[t.Name]
		cur := lr.Lever
		a.state[t.Name] = leverState{cur: cur, version: lr.Version}
		if cur == nil {
			continue
		}
		if !a.spec.Supersede {
			v := refusal("pass --supersede to replace it (releasing this action restores it)", "%s %s", a.ks.Kind, held(cur))
			v.refuse.Holder = cur
			return v, nil
		}
		replaced = append(replaced, cur.ActionID)
	}
	if len(replaced) > 0 {
		return pass("supersedes action %s, restored on release", strings.Join(replaced, ", ")), nil
	}
	return pass("no active lever on %s", strings.Join(a.names(), ", ")), nil
}

func (a *attempt) rateLimit(ctx context.Context) (verdict, error) {
	lim := a.s.Policy.RateLimit()
	snap, err := a.read(ctx)
	if err != nil {
		return verdict{}, err
	}
	st := snap.Rate
	if ref := a.rateRefusal(st); ref != nil {
		return verdict{refuse: ref}, nil
	}
	return pass("%s %d/%d, overall %d/%d per %s", a.actor, st.Actor, lim.PerActor, st.Overall, lim.Overall, lim.Window), nil
}

func (a *attempt) rateRefusal(st controlplane.RateStatus) *RefusedError {
	lim := a.s.Policy.RateLimit()
	hint := fmt.Sprintf("wait %s", st.ResetIn.Round(100_000_000))
	switch st.Limited {
	case "actor":
		return &RefusedError{Guard: GuardRateLimit, Hint: hint, Reason: fmt.Sprintf("%s made %d lever changes in %s (limit %d)", a.actor, st.Actor, lim.Window, lim.PerActor)}
	case "overall":
		return &RefusedError{Guard: GuardRateLimit, Hint: hint, Reason: fmt.Sprintf("%d lever changes in %s by everyone (limit %d)", st.Overall, lim.Window, lim.Overall)}
	}
	return nil
}

func (a *attempt) confirm(ctx context.Context) (verdict, error) {
	want := strings.Join(a.names(), ",")
	switch {
	case a.mode == modePlan:
		return verdict{status: StatusNotAsked, detail: "a plan asks for no confirmation"}, nil
	case a.spec.Yes:
		return pass("--yes"), nil
	case a.s.Confirm == nil:
		return refusal("pass --yes to confirm in a script", "no terminal to confirm on"), nil
	}
	prompt := fmt.Sprintf("Set %s=%s on %s for %s (%s)? Type %q to confirm: ", a.ks.Kind, a.value, want, a.spec.TTL, a.spec.Reason, want)
	ok, err := a.s.Confirm.Confirm(ctx, prompt, want)
	if err != nil {
		return refusal("pass --yes to confirm in a script", "confirmation failed: %v", err), nil
	}
	if !ok {
		return refusal("type the target exactly, or pass --yes", "the confirmation did not match %q", want), nil
	}
	return pass("typed %q", want), nil
}
