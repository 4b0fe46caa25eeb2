package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Spec is what an actor asks for, as typed on the command line.
type Spec struct {
	Kind, Target, Value string
	TTL                 time.Duration
	Reason              string
	Actor               string
	// Incident is attached to the action; "" attaches the current incident.
	Incident  string
	Force     bool // act without supporting evidence (journaled as forced)
	Supersede bool // replace a lever another action holds
	Yes       bool // confirmed in a script
	// Targets is the explicit count of targets (--targets N), needed when
	// a comma list names more than the policy's blast radius.
	Targets        int
	IdempotencyKey string
	// Restores names the lost entry this action re-applies (journal sync);
	// every entry of the attempt carries it.
	Restores *journal.Restored
}

// Service runs the guards and pulls levers through the control plane.
type Service struct {
	Store     ControlPlane
	Journal   Journal
	Policy    *Policy
	Inventory Inventory
	Evidence  Evidence
	Clock     Clock
	// Confirm asks at a terminal; nil means there is none, so only --yes
	// confirms.
	Confirm Confirmer
	// RunBy is the person who started this process; entries written as
	// the Automation actor record it ("automation (run by alice)").
	RunBy string
}

// mode is what an attempt was asked to do; its String is the operation a
// Result reports.
type mode int

const (
	modePlan mode = iota
	modeApply
	modeRequest
	modeApprove
)

func (m mode) String() string {
	switch m {
	case modePlan:
		return "plan"
	case modeApply:
		return "apply"
	case modeRequest:
		return "request"
	case modeApprove:
		return "approve"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// leverState is a lever as read before writing it.
type leverState struct {
	cur     *lever.Lever
	version int64
}

// attempt is one run of the guards for one action.
type attempt struct {
	s          *Service
	spec       Spec
	mode       mode
	id         string // the action id
	actor      string // who acts now: the requester, or the approver
	leverActor string // who holds the lever: the requester
	approval   *Approval
	// approvalRaw is the request record as read, for compare-and-set.
	approvalRaw string

	ks     KindSpec
	kindOK bool
	// parseErr is why the kind, targets or value did not parse (with
	// parseHint), for the validation guard; begin parses them once.
	parseErr  error
	parseHint string
	targets   []Target // still to apply (replayed targets removed)
	total     int      // targets named, for the blast radius
	value     string
	incident  string

	evidence map[string][]journal.Evidence
	forced   bool
	// unverified are the names --force let through unconfirmed;
	// nameNotes say where names were confirmed when not live.
	unverified []string
	nameNotes  []string
	pending    bool
	state      map[string]leverState
	snap       *controlplane.Snapshot // read once, see read
	head       string                 // the journal head last seen, for the first write
	replayed   []TargetResult
	guards     []GuardResult
	// inputErrs are the fields ("actor", "reason") that are not plain text.
	inputErrs map[string]error
	// ident is who Redis says we are, read by the policy guard.
	ident *controlplane.Identity
}

func (s *Service) begin(spec Spec, m mode) *attempt {
	errs := map[string]error{}
	spec.Reason, errs["reason"] = plainInput("reason", spec.Reason)
	spec.Actor, errs["actor"] = actorInput(spec.Actor)
	a := &attempt{inputErrs: errs, s: s, spec: spec, mode: m, id: journal.NewID(), actor: spec.Actor, leverActor: spec.Actor,
		evidence: map[string][]journal.Evidence{}, state: map[string]leverState{}, value: spec.Value}
	ks, err := ParseKind(spec.Kind)
	if err != nil {
		a.parseErr = err
		return a
	}
	a.ks, a.kindOK = ks, true
	ts, terr := ks.ParseTargets(spec.Target)
	if terr == nil {
		a.targets, a.total = ts, len(ts)
	}
	v, verr := ks.ParseValue(spec.Value)
	if verr == nil {
		a.value = v
	}
	switch {
	case terr != nil:
		a.parseErr, a.parseHint = terr, targetHint(ks)
	case verr != nil:
		a.parseErr = verr
	}
	return a
}

// Plan runs every guard without asking for confirmation or writing
// anything but the action.planned journal entries, and returns what apply
// would do. The error is what apply would return (a *RefusedError or a
// *PendingError), so a plan is a gate with apply's exit code.
func (s *Service) Plan(ctx context.Context, spec Spec) (*Result, error) {
	a := s.begin(spec, modePlan)
	ref, err := a.run(ctx)
	if errors.Is(err, controlplane.ErrUnavailable) {
		// Like an apply: the attempt is on the record (the journal writer
		// keeps it in the local pending file until `journal sync`).
		return nil, a.failedAs(ctx, journal.ActionPlanned, err)
	}
	if err != nil {
		return nil, err
	}
	outcome := "would apply"
	var verdict error
	switch {
	case ref != nil:
		outcome, verdict = "would be refused by the "+ref.Guard+" guard: "+ref.Reason, ref
	case a.pending:
		outcome = "would need approval by a second person"
		verdict = &PendingError{Request: a.newApproval(), Planned: true}
	}
	res := a.result(modePlan)
	for i, name := range a.names() {
		e := a.entry(journal.ActionPlanned, name)
		e.Outcome = joinNote(outcome, a.outcomeNote())
		if i < len(res.Targets) {
			e.Previous, e.New = stateOf(res.Targets[i].Before), stateOf(res.Targets[i].After)
		}
		sealed, _, err := s.Journal.Append(ctx, e)
		if err != nil {
			return res, fmt.Errorf("plan: journal: %w", err)
		}
		if i < len(res.Targets) {
			res.Targets[i].JournalEntry = sealed.ID
		}
	}
	return res, verdict
}

// Apply runs the guards and, if they pass, sets the levers. A kind that
// needs approval records a request and returns a *PendingError.
func (s *Service) Apply(ctx context.Context, spec Spec) (*Result, error) {
	return s.apply(ctx, s.begin(spec, modeApply))
}

func (s *Service) apply(ctx context.Context, a *attempt) (*Result, error) {
	if done, err := a.replay(ctx); done || err != nil {
		if err != nil {
			if ref, ok := a.keyReused(ctx, err); ok {
				return nil, ref
			}
			return nil, a.failed(ctx, err)
		}
		res := a.result(a.mode)
		settleExpiry(res)
		return res, nil
	}
	ref, err := a.run(ctx)
	if err != nil {
		return nil, a.failed(ctx, err)
	}
	if ref != nil {
		return a.result(a.mode), a.journalRefusal(ctx, ref)
	}
	if a.pending {
		ap, err := a.request(ctx)
		if err != nil {
			return nil, err
		}
		res := a.result(modeRequest) // what happened: a request, not an apply
		res.RequestID = ap.ID
		return res, &PendingError{Request: ap}
	}
	if a.approval != nil && a.approval.Status == RequestPending {
		if err := a.approve(ctx); err != nil {
			return nil, err
		}
	}
	res, err := a.commit(ctx)
	if ref, ok := a.keyReused(ctx, err); ok {
		return nil, ref // another request took the key since replay read it
	}
	// The first target's script spends the rate budget with its write; one
	// that finds it spent since the guard read it writes nothing.
	var spent *controlplane.RateLimitedError
	if errors.As(err, &spent) {
		ref := a.rateRefusal(spent.Status)
		a.guards = append(a.guards, GuardResult{Guard: GuardRateLimit, Status: StatusRefused, Detail: ref.Reason})
		return a.result(a.mode), a.journalRefusal(ctx, ref)
	}
	return res, err
}

// commit writes each lever; a failure part way leaves the earlier targets
// applied, and says so.
func (a *attempt) commit(ctx context.Context) (*Result, error) {
	now := a.s.Clock.Now()
	res := a.result(a.mode)
	res.Targets = res.Targets[:len(a.replayed)]
	var done []string
	for i, t := range a.targets {
		st := a.state[t.Name]
		e := a.entry("", t.Name)
		e.Outcome = a.outcomeNote() // the control plane prefixes "applied"
		req := controlplane.ApplyRequest{
			Lever: lever.Lever{Kind: a.ks.Kind, Target: t.Name, Value: a.value, ActionID: a.id, Actor: a.leverActor,
				Reason: a.spec.Reason, Incident: a.incident, CreatedAt: now, ExpiresAt: now.Add(a.spec.TTL)},
			Expected: st.version, Current: st.cur, Entry: e, IdempotencyKey: a.idemKey(t.Name), RequestHash: a.requestHash(),
		}
		if i == 0 { // one action spends one change of the budget
			req.Head, req.Rate = a.head, a.rateCharge()
		}
		r, err := a.s.Store.Apply(ctx, req)
		if err != nil {
			if len(done) > 0 {
				err = fmt.Errorf("applied to %s but not to %s: %w", strings.Join(done, ", "), t.Name, err)
			}
			return res, err
		}
		done = append(done, t.Name)
		res.Targets = append(res.Targets, TargetResult{Target: t.Name, Before: st.cur, After: r.Lever, Version: r.Version,
			Evidence: a.evidence[t.Name], JournalEntry: r.Entry.ID, Replayed: r.Replayed, Replication: r.Replication})
	}
	settleExpiry(res)
	return res, settleReplication(res)
}

// replay answers a retried apply from the first results of its
// idempotency key; targets not yet applied go through the guards.
func (a *attempt) replay(ctx context.Context) (bool, error) {
	key := a.idemKey("")
	if key == "" || len(a.targets) == 0 {
		return false, nil
	}
	snap, err := a.read(ctx)
	if err != nil {
		return false, err
	}
	if _, err := a.identity(ctx); err != nil {
		return false, err
	}
	var rest []Target
	for _, t := range a.targets {
		r := snap.Replays[a.idemKey(t.Name)]
		if r == nil || r.Lever == nil {
			rest = append(rest, t)
			continue
		}
		if err := controlplane.CheckReplay(a.idemKey(t.Name), a.requestHash(), a.leverActor, r); err != nil {
			return false, err
		}
		a.id = r.Lever.ActionID
		a.forced = r.Entry.Forced
		a.incident = r.Lever.Incident
		a.evidence[t.Name] = r.Entry.Evidence
		a.replayed = append(a.replayed, TargetResult{Target: t.Name, Before: r.Lever.Previous, After: r.Lever,
			Version: r.Version, Evidence: r.Entry.Evidence, JournalEntry: r.Entry.ID, Replayed: true})
	}
	a.targets = rest
	if len(rest) == 0 && len(a.replayed) > 0 { // all replayed: the first result, as it was then
		first := a.replayed[0].After
		a.spec.Reason, a.leverActor = first.Reason, first.Actor
	}
	if len(a.replayed) > 0 {
		a.guards = append(a.guards, GuardResult{Guard: GuardIdempotency, Status: StatusReplayed,
			Detail: fmt.Sprintf("%d target(s) already applied with this key; nothing changed for them", len(a.replayed))})
	}
	return len(rest) == 0, nil
}

func (a *attempt) idemKey(target string) string {
	base := a.spec.IdempotencyKey
	if a.approval != nil {
		base = "request:" + a.approval.ID
	}
	if base == "" || target == "" || a.total <= 1 {
		return base
	}
	return base + "/" + target
}

// names are the targets to journal: the parsed ones, or the raw text when
// it did not parse.
func (a *attempt) names() []string {
	if len(a.targets) == 0 {
		return []string{a.spec.Target}
	}
	out := make([]string, len(a.targets))
	for i, t := range a.targets {
		out[i] = t.Name
	}
	return out
}

// result is what the attempt did as operation m, which is its own mode
// but for an apply that became a request.
func (a *attempt) result(m mode) *Result {
	kind := Kind(a.spec.Kind)
	if a.kindOK {
		kind = a.ks.Kind
	}
	r := &Result{Operation: m.String(), ActionID: a.id, Kind: kind, Value: a.value, Actor: a.leverActor, Reason: a.spec.Reason,
		Incident: a.incident, TTL: journal.Duration(a.spec.TTL), Forced: a.forced, Unverified: a.unverified, Guards: a.guards,
		Targets: append([]TargetResult{}, a.replayed...)}
	if a.approval != nil {
		r.RequestID = a.approval.ID
		if a.actor != a.leverActor {
			r.ApprovedBy = a.actor
		}
	}
	r.Advisory = a.advisory()
	r.Replayed = len(a.replayed) > 0 && len(a.targets) == 0
	now := a.s.Clock.Now()
	if a.spec.TTL > 0 && !r.Replayed {
		exp := now.Add(a.spec.TTL).UTC()
		r.ExpiresAt = &exp
	}
	for _, t := range a.targets {
		st := a.state[t.Name]
		tr := TargetResult{Target: t.Name, Before: st.cur, Version: st.version + 1, Evidence: a.evidence[t.Name]}
		if a.kindOK && a.spec.TTL > 0 {
			tr.After = &lever.Lever{Kind: a.ks.Kind, Target: t.Name, Value: a.value, ActionID: a.id, Actor: a.leverActor,
				Reason: a.spec.Reason, Incident: a.incident, CreatedAt: now.UTC(), ExpiresAt: now.Add(a.spec.TTL).UTC(),
				Version: st.version + 1, Previous: st.cur}
		}
		r.Targets = append(r.Targets, tr)
	}
	return r
}
