package kubernetes_test

import (
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

var checkoutLabels = map[string]string{"app.kubernetes.io/name": "checkout"}

// Freezing disables both directions on every HPA of the service, found by
// the default label; release restores spec.behavior exactly: absent stays
// absent (the server's defaults are not "restored" into it), a set behavior
// comes back as it was. Replica bounds are never touched. Both are journaled
// with the object and the fields before and after, and the actuator counts
// in "seen by".
func TestFreezeAndReleaseHPA(t *testing.T) {
	f := newFixture(t)
	window := int32(30)
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	plain := f.hpa("checkout", nil, checkoutLabels)
	tuned := f.hpa("checkout-canary", &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &maxPolicy,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}}},
	}, checkoutLabels)
	other := f.hpa("ledger", nil, map[string]string{"app.kubernetes.io/name": "ledger"})
	if plain.Spec.Behavior != nil {
		t.Fatalf("precondition: the server defaulted an absent behavior: %s", js(plain.Spec.Behavior))
	}
	f.start(nil, kube.Mapping{}, "a1")

	l := f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "both HPAs frozen", func() (bool, string) {
		a, b := f.getHPA("checkout"), f.getHPA("checkout-canary")
		return frozen(a) && frozen(b), js(a.Spec.Behavior) + " " + js(b.Spec.Behavior)
	})
	h := f.getHPA("checkout")
	if *h.Spec.MinReplicas != 24 || h.Spec.MaxReplicas != 80 {
		t.Errorf("replica bounds changed: %d..%d", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if !contains(h.Annotations[kube.SavedAnnotation], l.ActionID) {
		t.Errorf("saved annotation %q lacks the action id %s", h.Annotations[kube.SavedAnnotation], l.ActionID)
	}
	if frozen(f.getHPA("ledger")) {
		t.Error("another service's HPA was frozen")
	}
	eventually(t, "actuator in seen by", func() (bool, string) {
		seen, live, err := f.store.Acks(ctx(t))
		return err == nil && seen["autoscaling:checkout"] == 1 && live == 1, js(seen)
	})
	applied := f.entries(journal.ActuationApplied)
	if len(applied) != 2 {
		t.Fatalf("want 2 actuation.applied entries, got %s", js(applied))
	}
	for _, e := range applied {
		if e.ActionID != l.ActionID || e.Kind != "autoscaling" || e.Target != "checkout" || len(e.Changes) != 2 || e.Object == "" {
			t.Errorf("applied entry lacks the lever, object or fields: %s", js(e))
		}
	}

	f.release(lever.Autoscaling, "checkout")
	eventually(t, "behaviors restored", func() (bool, string) {
		a, b := f.getHPA("checkout"), f.getHPA("checkout-canary")
		return a.Spec.Behavior == nil && reflect.DeepEqual(b.Spec.Behavior, tuned.Spec.Behavior),
			js(a.Spec.Behavior) + " vs " + js(b.Spec.Behavior) + " want " + js(tuned.Spec.Behavior)
	})
	if _, ok := f.getHPA("checkout").Annotations[kube.SavedAnnotation]; ok {
		t.Error("the saved annotation outlived the release")
	}
	eventually(t, "restores journaled", func() (bool, string) {
		r := f.entries(journal.ActuationRestored)
		return len(r) == 2, js(r)
	})
	_ = other
}

// A lever that expires while no actuator runs is restored when one comes
// back, exactly once; a restarted actuator does not write again.
func TestExpiredWhileStoppedRestoredOnRestart(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	first := f.start(nil, kube.Mapping{}, "a1")
	first.ready(t) // the TTL counts from here, not from a slow start
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 8*time.Second)
	eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })
	first.stop()
	eventually(t, "lever expired", func() (bool, string) {
		l, _, _, err := f.store.Get(ctx(t), lever.Autoscaling, "checkout")
		return err == nil && l == nil, js(l)
	})
	if !frozen(f.getHPA("checkout")) {
		t.Fatal("the HPA thawed with no actuator running")
	}
	f.start(nil, kube.Mapping{}, "a2")
	eventually(t, "restored after restart", func() (bool, string) {
		h := f.getHPA("checkout")
		return h.Spec.Behavior == nil && h.Annotations[kube.SavedAnnotation] == "", js(h.Spec.Behavior)
	})
	time.Sleep(3 * time.Second) // a resync or two more
	if r := f.journaled(journal.ActuationRestored, 1); len(r) != 1 {
		t.Errorf("want one actuation.restored, got %d: %s", len(r), js(r))
	}
}

// Another field manager that sets scaling back while the lever holds is
// reported (journal and status), naming the manager, and not fought over;
// the release leaves that field as the manager set it, reports it again and
// puts back the rest (scaleDown scales again).
func TestConcurrentEditReported(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	r := f.start(nil, kube.Mapping{}, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })

	h := f.getHPA("checkout")
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	h.Spec.Behavior.ScaleUp.SelectPolicy = &maxPolicy
	if err := f.admin.Update(ctx(t), h, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "conflict journaled", func() (bool, string) {
		c := f.entries(journal.ActuationConflict)
		return len(c) == 1 && contains(c[0].Error, "kubectl-edit") && contains(c[0].Error, "/spec/behavior/scaleUp/selectPolicy"), js(c)
	})
	eventually(t, "conflict in status", func() (bool, string) {
		st, err := f.store.Statuses(ctx(t), kube.Component)
		return err == nil && len(st) == 1 && len(st[0].Problems) == 1 && contains(st[0].Problems[0], "kubectl-edit"), js(st)
	})
	r.a.Poke()
	time.Sleep(2 * time.Second)
	if p := f.getHPA("checkout").Spec.Behavior.ScaleUp.SelectPolicy; *p != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("the actuator fought the edit: scaleUp.selectPolicy %s", *p)
	}
	if n := len(f.entries(journal.ActuationConflict)); n != 1 {
		t.Errorf("the same conflict was journaled %d times", n)
	}
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "released around the edit", func() (bool, string) {
		b := f.getHPA("checkout").Spec.Behavior
		ok := b != nil && b.ScaleUp != nil && b.ScaleUp.SelectPolicy != nil && *b.ScaleUp.SelectPolicy == autoscalingv2.MaxChangePolicySelect &&
			b.ScaleDown != nil && b.ScaleDown.SelectPolicy != nil && *b.ScaleDown.SelectPolicy != autoscalingv2.DisabledPolicySelect
		return ok, js(b)
	})
	eventually(t, "the field left on release journaled", func() (bool, string) {
		c := f.entries(journal.ActuationConflict)
		return len(c) == 2 && contains(c[1].Error, "left as it is on release") && contains(c[1].Error, "kubectl-edit"), js(c)
	})
}

// A human edits one sibling field of a frozen HPA (kubectl edit of
// scaleUp.stabilizationWindowSeconds): the release keeps that edit and puts
// back everything the freeze changed, so both directions scale again; no
// conflict is reported, as the human took no field the actuator set.
func TestSiblingEditKeptOnRelease(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	f.start(nil, kube.Mapping{}, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })

	h := f.getHPA("checkout")
	window := int32(60)
	h.Spec.Behavior.ScaleUp.StabilizationWindowSeconds = &window
	if err := f.admin.Update(ctx(t), h, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "released, the edit kept", func() (bool, string) {
		b := f.getHPA("checkout").Spec.Behavior
		ok := b != nil && b.ScaleUp != nil && b.ScaleDown != nil && b.ScaleUp.StabilizationWindowSeconds != nil &&
			*b.ScaleUp.StabilizationWindowSeconds == 60 && b.ScaleUp.SelectPolicy != nil && b.ScaleDown.SelectPolicy != nil &&
			*b.ScaleUp.SelectPolicy != autoscalingv2.DisabledPolicySelect && *b.ScaleDown.SelectPolicy != autoscalingv2.DisabledPolicySelect
		return ok, js(b)
	})
	if _, ok := f.getHPA("checkout").Annotations[kube.SavedAnnotation]; ok {
		t.Error("the saved annotation outlived the release")
	}
	eventually(t, "restore journaled", func() (bool, string) {
		r := f.entries(journal.ActuationRestored)
		return len(r) == 1 && len(r[0].Changes) > 0, js(r)
	})
	if c := f.entries(journal.ActuationConflict); len(c) != 0 {
		t.Errorf("a sibling edit was reported as a conflict: %s", js(c))
	}
}
