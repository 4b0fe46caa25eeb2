package alerts

import (
	"context"
	"testing"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
)

// measured answers every query with one value.
type measured float64

func (v measured) Measure(_ context.Context, m playbooks.MeasureRequest) (playbooks.Measurement, error) {
	return playbooks.Measurement{Query: m.Query, Series: []playbooks.SeriesValue{{Value: float64(v)}}}, nil
}

// events records what the run journals.
type events []string

func (e *events) Append(_ context.Context, en journal.Entry) (journal.Entry, bool, error) {
	*e = append(*e, string(en.Event)+" "+en.Step)
	return en, false, nil
}

const choosePlaybook = `apiVersion: stormctl/v1
kind: Playbook
name: choose
title: t
steps:
  - id: note
    type: note
    text: read me
  - id: storm
    type: check
    query: amplification
    expect: "> 1.3"
    on_fail: continue
  - id: cap
    type: action
    when: {passed: storm}
    kind: retries
    target: checkout->payments
    value: "cap:2"
    reason: r
    ttl: 5m
  - id: off
    type: action
    when: {skipped: cap}
    kind: retries
    target: checkout->payments
    value: "off"
    reason: r
    ttl: 5m
  - id: verify
    type: wait
    query: amplification
    expect: "< 1.1"
    timeout: 1m
`

// The autopilot walks the playbook as a responder would: the check decides
// between the two lever steps, the one passed over is journaled as
// skipped, the note is not shown to anybody, and a wait before any lever
// leaves nothing to pull.
func TestChooseAction(t *testing.T) {
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := playbooks.Parse("choose.yaml", []byte(choosePlaybook), cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value   measured
		chosen  string
		journal []string
	}{
		{4, "cap", []string{"playbook.started ", "playbook.step.passed storm"}},
		{1, "off", []string{"playbook.started ", "playbook.step.failed storm", "playbook.step.skipped cap"}},
	} {
		var j events
		run, err := playbooks.NewRun(pb, playbooks.RunOptions{Actor: Actor}, playbooks.Env{Measurer: c.value, Journal: &j})
		if err != nil {
			t.Fatal(err)
		}
		act, verify, err := chooseAction(context.Background(), run, pb)
		if err != nil || act == nil || act.ID != c.chosen || verify == nil || verify.ID != "verify" {
			t.Fatalf("amplification %v: chose %+v, verify %+v, %v; want %s verified by verify", c.value, act, verify, err, c.chosen)
		}
		if len(j) != len(c.journal) {
			t.Fatalf("amplification %v: journaled %q, want %q", c.value, j, c.journal)
		}
		for i := range j {
			if j[i] != c.journal[i] {
				t.Fatalf("amplification %v: journaled %q, want %q", c.value, j, c.journal)
			}
		}
	}

	waitFirst := playbooks.Step{ID: "settle", Type: playbooks.Wait}
	pb.Steps = append([]*playbooks.Step{&waitFirst}, pb.Steps...)
	run, err := playbooks.NewRun(pb, playbooks.RunOptions{Actor: Actor}, playbooks.Env{Measurer: measured(4), Journal: &events{}})
	if err != nil {
		t.Fatal(err)
	}
	if act, _, err := chooseAction(context.Background(), run, pb); act != nil || err != nil {
		t.Fatalf("a wait before any lever: chose %+v, %v; want nothing", act, err)
	}
}

// A caller with a degraded mode the policy lets the autopilot enter gets
// it from the retry playbook, verified by the edge being served; one
// without (or not allowed it) gets its retries, verified by amplification,
// the degraded steps' wait passed over rather than ending the walk.
func TestChooseDegradedMode(t *testing.T) {
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.Load(cat)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := set.Get("retry-amplification")
	if err != nil {
		t.Fatal(err)
	}
	ev := &Event{Service: "checkout", Alert: Alert{Labels: map[string]string{"service": "checkout", "dependency": "payments"}}}
	for _, c := range []struct {
		allow          map[string][]string
		chosen, verify string
	}{
		{map[string][]string{"retries": {"checkout"}, "degraded": {"checkout"}}, "degraded-mode", "edge-served"},
		{map[string][]string{"retries": {"checkout"}, "degraded": {"ledger"}}, "retries-off", "amplification-recovered"},
	} {
		p := &Autopilot{Allow: c.allow, Modes: map[string]string{"checkout": "defer-payment"}}
		run, err := playbooks.NewRun(pb, playbooks.RunOptions{Actor: Actor, Params: p.params(pb, ev)},
			playbooks.Env{Measurer: measured(4), Journal: &events{}})
		if err != nil {
			t.Fatal(err)
		}
		act, verify, err := chooseAction(context.Background(), run, pb)
		if err != nil || act == nil || act.ID != c.chosen || verify == nil || verify.ID != c.verify {
			t.Fatalf("allow %v: chose %+v, verify %+v, %v; want %s verified by %s", c.allow, act, verify, err, c.chosen, c.verify)
		}
		if v := run.Render(act.Value); act.Kind == "degraded" && v != "defer-payment" {
			t.Fatalf("degraded value %q", v)
		}
	}
}
