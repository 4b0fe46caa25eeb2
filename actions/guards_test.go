package actions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func TestGuardsRefuse(t *testing.T) {
	held := &lever.Lever{Kind: "retries", Target: "checkout->payments", Value: "cap:2", ActionID: "A0", Actor: "bob",
		Reason: "earlier", CreatedAt: time.Now().Add(-time.Minute), ExpiresAt: time.Now().Add(time.Minute), Version: 3}
	cases := []struct {
		name   string
		change func(*Spec, *Service, *fakeCP)
		guard  string
		msg    string // in the error
		code   int
	}{
		{"unknown kind", func(s *Spec, _ *Service, _ *fakeCP) { s.Kind = "retry" }, GuardValidation, "did you mean retries", exit.Refused},
		{"target syntax", func(s *Spec, _ *Service, _ *fakeCP) { s.Target = "checkout->" }, GuardValidation, "empty dependency", exit.Refused},
		{"target form", func(s *Spec, _ *Service, _ *fakeCP) { s.Kind, s.Value = "shed", "20" }, GuardValidation, "targets a service", exit.Refused},
		{"value syntax", func(s *Spec, _ *Service, _ *fakeCP) { s.Value = "cap:0" }, GuardValidation, "from 1 to 100", exit.Refused},
		{"typo in service", func(s *Spec, _ *Service, _ *fakeCP) { s.Target = "chekout->payments" }, GuardValidation, "did you mean checkout", exit.Refused},
		{"typo in dependency", func(s *Spec, _ *Service, _ *fakeCP) { s.Target = "checkout->paymnts" }, GuardValidation, `unknown dependency "paymnts"`, exit.Refused},
		{"unknown dependency", func(s *Spec, _ *Service, _ *fakeCP) { s.Target = "checkout->zzz" }, GuardValidation, "add it to inventory.dependencies in the context", exit.Refused},
		{"inventory unreachable", func(s *Spec, w *Service, _ *fakeCP) {
			w.Inventory = NewNames(config.Inventory{}, nil, fakeLabels{err: errors.New("prometheus down")})
		}, GuardValidation, "cannot confirm", exit.Refused},
		{"unknown incident", func(s *Spec, _ *Service, _ *fakeCP) { s.Incident = "INC-9" }, GuardValidation, `unknown incident "INC-9"`, exit.Refused},
		{"policy", func(s *Spec, _ *Service, _ *fakeCP) { s.Actor = "victor" }, GuardPolicy, "victor (role viewer) may not use retries", exit.Refused},
		{"reason", func(s *Spec, _ *Service, _ *fakeCP) { s.Reason = "  " }, GuardReason, "a reason is required", exit.Refused},
		{"no ttl", func(s *Spec, _ *Service, _ *fakeCP) { s.TTL = 0 }, GuardTTL, "a TTL is required", exit.Refused},
		{"negative ttl", func(s *Spec, _ *Service, _ *fakeCP) { s.TTL = -5 * time.Minute }, GuardTTL, "TTL -5m0s is negative", exit.Refused},
		{"ttl under a second", func(s *Spec, _ *Service, _ *fakeCP) { s.TTL = 999 * time.Millisecond }, GuardTTL, "TTL 999ms is under the minimum 1s", exit.Refused},
		{"ttl too long", func(s *Spec, _ *Service, _ *fakeCP) {
			s.Kind, s.Target, s.Value, s.TTL = "degraded", "checkout", "on", 2*time.Hour
		}, GuardTTL, "exceeds the maximum 1h0m0s", exit.Refused},
		{"ttl over the config maximum", func(s *Spec, _ *Service, _ *fakeCP) { s.TTL = 20 * time.Minute }, GuardTTL, "maximum 15m0s", exit.Refused},
		{"no evidence", func(s *Spec, _ *Service, _ *fakeCP) { s.Target = "ledger->db" }, GuardEvidence, "amplification 1 (ok", exit.Refused},
		{"prometheus unreachable", func(s *Spec, w *Service, _ *fakeCP) {
			w.Evidence = fakeEvidence{err: errors.New("connection refused")}
		}, GuardEvidence, "connection refused", exit.Refused},
		{"blast radius", func(s *Spec, _ *Service, _ *fakeCP) {
			s.Kind, s.Target, s.Value = "breaker", "payments,checkout->payments", "open"
		}, GuardBlastRadius, "more than the blast radius of 1", exit.Refused},
		{"target count mismatch", func(s *Spec, _ *Service, _ *fakeCP) { s.Targets = 2 }, GuardBlastRadius, "--targets 2 does not match", exit.Refused},
		{"conflict", func(_ *Spec, _ *Service, cp *fakeCP) {
			cp.levers["retries:checkout->payments"], cp.versions["retries:checkout->payments"] = held, 3
		}, GuardConflict, "action A0 of bob", exit.Conflict},
		{"rate limit", func(_ *Spec, _ *Service, cp *fakeCP) {
			cp.rate = controlplane.RateStatus{Actor: 2, Limited: "actor", ResetIn: time.Second}
		}, GuardRateLimit, "alice made 2 lever changes", exit.Refused},
		{"no terminal", func(s *Spec, _ *Service, _ *fakeCP) { s.Yes = false }, GuardConfirmation, "pass --yes", exit.Refused},
		{"typed wrong", func(s *Spec, w *Service, _ *fakeCP) { s.Yes, w.Confirm = false, typed{"checkout"} }, GuardConfirmation, "did not match", exit.Refused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := newFakeCP()
			w := world(cp, config.Policy{Roles: map[string]string{"victor": RoleViewer}, MaxTTL: map[string]config.Duration{"retries": config.Duration(15 * time.Minute)}})
			spec := okSpec()
			c.change(&spec, w, cp)
			before := len(cp.levers)
			_, err := w.Apply(context.Background(), spec)
			var ref *RefusedError
			if !errors.As(err, &ref) || ref.Guard != c.guard {
				t.Fatalf("want a refusal by %s, got %v", c.guard, err)
			}
			if !strings.Contains(err.Error(), c.msg) || exit.Code(err) != c.code {
				t.Fatalf("error %q (exit %d), want %q (exit %d)", err, exit.Code(err), c.msg, c.code)
			}
			if cp.writes != 0 || cp.takes != 0 || len(cp.levers) != before {
				t.Fatalf("a refusal changed something: %d writes, %d rate takes", cp.writes, cp.takes)
			}
			es := cp.entries()
			if len(es) != strings.Count(spec.Target, ",")+1 || len(ref.Entries) != len(es) {
				t.Fatalf("one refusal entry per target, got %d: %+v", len(es), es)
			}
			for i, e := range es {
				if e.Event != journal.ActionRefused || e.Outcome != "refused: "+c.guard || e.Error != err.Error() || ref.Entries[i] != e.ID {
					t.Fatalf("journal: %+v", e)
				}
			}
			if c.guard == GuardConflict && (ref.Holder == nil || es[0].Previous == nil || es[0].Previous.ActionID != "A0") {
				t.Fatalf("the conflict must name the holder: %+v", es[0].Previous)
			}
		})
	}
}

func TestApplyPassesEveryGuard(t *testing.T) {
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	w.Confirm = typed{"checkout->payments"}
	spec := okSpec()
	spec.Yes = false
	res, err := w.Apply(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range res.Guards {
		if g.Status != StatusPassed {
			t.Fatalf("guard %s: %s %s", g.Guard, g.Status, g.Detail)
		}
		names = append(names, g.Guard)
	}
	if strings.Join(names, ",") != strings.Join(Guards, ",") {
		t.Fatalf("guards ran as %v, want %v", names, Guards)
	}
	l := cp.levers["retries:checkout->payments"]
	if l == nil || l.Value != "off" || l.ActionID != res.ActionID || cp.takes != 1 {
		t.Fatalf("lever %+v, %d rate takes", l, cp.takes)
	}
	e := cp.entries()[0]
	if e.Forced || len(e.Evidence) != 2 || e.Evidence[0].Query != "amplification" || e.Evidence[0].Value != 4 || e.TTL != journal.Duration(10*time.Minute) {
		t.Fatalf("applied entry: %+v", e)
	}
}

func TestForceIsJournaled(t *testing.T) {
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	spec := okSpec()
	spec.Target, spec.Force = "ledger->db", true
	res, err := w.Apply(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Forced || res.Guards[4].Status != StatusForced || !strings.Contains(res.Guards[4].Detail, "forced by alice") {
		t.Fatalf("result: %+v", res.Guards[4])
	}
	if e := cp.entries()[0]; !e.Forced || e.Evidence[0].Status != "ok" {
		t.Fatalf("entry must be forced and carry the evidence seen: %+v", e)
	}
	// With evidence, --force is not needed and the entry does not say forced.
	spec = okSpec()
	spec.Force = true
	if res, err := w.Apply(context.Background(), spec); err != nil || res.Forced {
		t.Fatalf("forced with evidence: %+v %v", res, err)
	}
}

func TestPlanEvaluatesEveryGuardAndWritesOnlyThePlan(t *testing.T) {
	cp := newFakeCP()
	w := world(cp, config.Policy{Approval: []string{"autoscaling"}})
	spec := okSpec()
	spec.Reason, spec.TTL, spec.Yes = "", 0, false
	res, err := w.Plan(context.Background(), spec)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardReason {
		t.Fatalf("a plan returns the first refusal: %v", err)
	}
	st := map[string]string{}
	for _, g := range res.Guards {
		st[g.Guard] = g.Status
	}
	want := map[string]string{GuardValidation: StatusPassed, GuardReason: StatusRefused, GuardTTL: StatusRefused,
		GuardEvidence: StatusPassed, GuardConflict: StatusPassed, GuardConfirmation: StatusNotAsked}
	for g, s := range want {
		if st[g] != s {
			t.Fatalf("guard %s: %s, want %s (%v)", g, st[g], s, res.Guards)
		}
	}
	es := cp.entries()
	if len(es) != 1 || es[0].Event != journal.ActionPlanned || !strings.Contains(es[0].Outcome, "reason guard") || cp.writes != 0 || cp.takes != 0 {
		t.Fatalf("a plan writes one action.planned entry only: %+v, %d writes", es, cp.writes)
	}
	// A kind that needs approval plans as pending (exit 5), recording no request.
	spec = Spec{Kind: "autoscaling", Target: "checkout", Value: "frozen", TTL: time.Hour, Reason: "churn", Actor: "alice", Force: true}
	res, err = w.Plan(context.Background(), spec)
	if exit.Code(err) != exit.Pending || len(cp.records[requestsCollection]) != 0 || res.Targets[0].After == nil || res.Targets[0].After.Value != "frozen" {
		t.Fatalf("planned approval: %v %+v", err, res)
	}
	// Validation failing skips the rest.
	spec.Kind = "nope"
	res, _ = w.Plan(context.Background(), spec)
	if res.Guards[1].Status != StatusSkipped || len(res.Guards) != len(Guards) {
		t.Fatalf("after an invalid action: %+v", res.Guards)
	}
}

func TestGuardOrder(t *testing.T) {
	// Everything is wrong after validation; the policy guard answers first.
	cp := newFakeCP()
	w := world(cp, config.Policy{Roles: map[string]string{"victor": RoleViewer}})
	spec := Spec{Kind: "retries", Target: "ledger->db", Value: "off", Actor: "victor"}
	_, err := w.Apply(context.Background(), spec)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardPolicy {
		t.Fatalf("%v", err)
	}
}

func TestSupersedeAndRelease(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	first, err := w.Apply(ctx, okSpec())
	if err != nil {
		t.Fatal(err)
	}
	spec := okSpec()
	spec.Value, spec.Supersede, spec.Actor = "cap:2", true, "bob"
	second, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if second.Targets[0].Before.ActionID != first.ActionID {
		t.Fatalf("before: %+v", second.Targets[0].Before)
	}
	if _, err := w.Release(ctx, first.ActionID, "alice", ""); !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("releasing a superseded action must say by whom: %v", err)
	}
	rel, err := w.Release(ctx, second.ActionID, "bob", "payments recovered")
	if err != nil {
		t.Fatal(err)
	}
	if after := rel.Targets[0].After; after == nil || after.ActionID != first.ActionID || after.Value != "off" {
		t.Fatalf("release must restore the superseded lever: %+v", after)
	}
}

func TestIdempotencyKeyReplays(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	spec := okSpec()
	spec.IdempotencyKey = "runbook-42-step-3"
	first, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	n := len(cp.entries())
	again, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.ActionID != first.ActionID || again.Targets[0].JournalEntry != first.Targets[0].JournalEntry ||
		len(cp.entries()) != n || cp.writes != 1 || cp.takes != 1 {
		t.Fatalf("replay: %+v; %d entries, %d writes", again, len(cp.entries()), cp.writes)
	}
}

func TestRequestApprove(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{Approval: []string{"retries"}})
	_, err := w.Apply(ctx, okSpec())
	var pe *PendingError
	if !errors.As(err, &pe) || exit.Code(err) != exit.Pending || cp.writes != 0 {
		t.Fatalf("apply of an approval kind: %v", err)
	}
	id := pe.Request.ID
	_, err = w.Approve(ctx, id, "alice", true)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardApproval || !strings.Contains(err.Error(), "may not approve their own") || cp.writes != 0 {
		t.Fatalf("self-approval: %v", err)
	}
	res, err := w.Approve(ctx, id, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	l := cp.levers["retries:checkout->payments"]
	if res.ApprovedBy != "bob" || l.Actor != "alice" || l.ActionID != pe.Request.ActionID {
		t.Fatalf("approved: %+v, lever %+v", res, l)
	}
	if again, err := w.Approve(ctx, id, "bob", true); err != nil || !again.Replayed || cp.writes != 1 {
		t.Fatalf("approving again must not apply twice: %+v %v", again, err)
	}
	if _, err := w.Approve(ctx, id, "carol", true); err == nil || !strings.Contains(err.Error(), "already approved by bob") {
		t.Fatalf("a third person: %v", err)
	}
	var events []journal.Event
	for _, e := range cp.entries() {
		events = append(events, e.Event)
	}
	want := []journal.Event{journal.ActionRequested, journal.ActionRefused, journal.ActionApproved, journal.ActionApplied}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
}

func TestMultiTargetAction(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	spec := Spec{Kind: "breaker", Target: "payments,checkout->payments", Value: "open", TTL: 10 * time.Minute,
		Reason: "p99 above timeout", Actor: "alice", Yes: true, Targets: 2, IdempotencyKey: "k"}
	res, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 2 || cp.levers["breaker:payments"].ActionID != res.ActionID || cp.levers["breaker:checkout->payments"].ActionID != res.ActionID {
		t.Fatalf("one action id must hold both levers: %+v", res.Targets)
	}
	if again, err := w.Apply(ctx, spec); err != nil || !again.Replayed || len(again.Targets) != 2 || cp.writes != 2 {
		t.Fatalf("replay of both targets: %+v %v", again, err)
	}
	rel, err := w.Release(ctx, res.ActionID, "alice", "recovered")
	if err != nil || len(rel.Targets) != 2 || len(cp.levers) != 0 {
		t.Fatalf("release must end both: %+v %v", rel, err)
	}
	if e := cp.entries()[len(cp.entries())-1]; e.Reason != "recovered" {
		t.Fatalf("release reason: %q", e.Reason)
	}
}

func TestReleaseNeedsARoleThatMayUseTheKind(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{Roles: map[string]string{"victor": RoleViewer}})
	res, err := w.Apply(ctx, okSpec())
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Release(ctx, res.ActionID, "victor", "recovered")
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardPolicy || cp.levers["retries:checkout->payments"] == nil {
		t.Fatalf("a viewer's release: %v", err)
	}
	if e := cp.entries()[len(cp.entries())-1]; e.Event != journal.ActionRefused || e.Actor != "victor" {
		t.Fatalf("the refusal must be journaled: %+v", e)
	}
	if _, err := w.Extend(ctx, res.ActionID, "alice", "still storming", 0); err == nil || !strings.Contains(err.Error(), "TTL is required") {
		t.Fatalf("extend without a TTL: %v", err)
	}
}

// Release and extend need a reason, like apply; the refusal is journaled
// and nothing changes.
func TestReleaseAndExtendNeedAReason(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	w := world(cp, config.Policy{})
	res, err := w.Apply(ctx, okSpec())
	if err != nil {
		t.Fatal(err)
	}
	for op, do := range map[string]func() error{
		"release": func() error { _, err := w.Release(ctx, res.ActionID, "alice", "  "); return err },
		"extend":  func() error { _, err := w.Extend(ctx, res.ActionID, "alice", "", 10*time.Minute); return err },
	} {
		var ref *RefusedError
		if err := do(); !errors.As(err, &ref) || ref.Guard != GuardReason || !strings.Contains(ref.Hint, "stormctl action "+op+" "+res.ActionID) {
			t.Fatalf("%s without a reason: %v", op, err)
		}
		if e := cp.entries()[len(cp.entries())-1]; e.Event != journal.ActionRefused || e.Outcome != "refused: reason" {
			t.Fatalf("%s: the refusal must be journaled: %+v", op, e)
		}
	}
	if l := cp.levers["retries:checkout->payments"]; l == nil || !l.ExpiresAt.Equal(res.Targets[0].After.ExpiresAt) {
		t.Fatalf("the lever must be unchanged: %+v", l)
	}
}

// The two-person rule compares authenticated identities: with per-person
// Redis users, the user who requested cannot approve under another
// --actor; another user can. With one shared user the approval passes,
// said to be advisory.
func TestApprovalComparesRedisUsers(t *testing.T) {
	ctx := context.Background()
	cp := newFakeCP()
	cp.identity = controlplane.Identity{User: "alice", ACL: true}
	w := world(cp, config.Policy{Approval: []string{"retries"}})
	_, err := w.Apply(ctx, okSpec())
	var pe *PendingError
	if !errors.As(err, &pe) || pe.Request.RequesterUser != "alice" {
		t.Fatalf("request: %v", err)
	}
	_, err = w.Approve(ctx, pe.Request.ID, "bob", true)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardApproval || exit.Code(err) != exit.Refused || cp.writes != 0 ||
		!strings.Contains(err.Error(), "made as Redis user alice (actor alice), and you are Redis user alice") {
		t.Fatalf("same Redis user as bob: %v", err)
	}
	cp.identity = controlplane.Identity{User: "bob", ACL: true}
	res, err := w.Approve(ctx, pe.Request.ID, "bob", true)
	if err != nil || res.ApprovedBy != "bob" || res.Advisory != "" {
		t.Fatalf("bob as bob: %+v %v", res, err)
	}
	es := cp.entries()
	if ap := es[len(es)-2]; ap.Event != journal.ActionApproved || !strings.Contains(ap.Outcome, "(Redis users alice → bob)") {
		t.Fatalf("approval entry %+v", ap)
	}

	shared := newFakeCP() // no ACL: every client is one
	w = world(shared, config.Policy{Approval: []string{"retries"}})
	if _, err := w.Apply(ctx, okSpec()); !errors.As(err, &pe) {
		t.Fatal(err)
	}
	if _, err := w.Approve(ctx, pe.Request.ID, Automation, true); !errors.As(err, &ref) || ref.Guard != GuardPolicy ||
		!strings.Contains(err.Error(), "automation (role automation) may not approve") || !strings.Contains(err.Error(), "advisory") {
		t.Fatalf("automation approving: %v", err)
	}
	res, err = w.Approve(ctx, pe.Request.ID, "bob", true)
	if err != nil || !strings.Contains(res.Advisory, "roles and approvals are advisory") {
		t.Fatalf("shared approval: %+v %v", res, err)
	}
}
