package kubernetes

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
)

// A write computed from a stale copy (another writer changed the object
// since) gets 409 from the real API server; the actuator reads the object
// again, computes again and writes once more, losing neither change.
func TestConflictRetriedWithoutLostUpdate(t *testing.T) {
	env := kubeenv.Start(t, "testdata/crds")
	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := "conflict-" + metav1.Now().Format("150405")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	hpa := hpaObject(t, "")
	hpa.SetNamespace(ns)
	hpa.SetResourceVersion("")
	if err := c.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	stale := &unstructured.Unstructured{}
	stale.SetGroupVersionKind(HPAKind)
	if err := c.Get(ctx, client.ObjectKeyFromObject(hpa), stale); err != nil {
		t.Fatal(err)
	}
	moved := stale.DeepCopy()
	moved.SetLabels(map[string]string{"team": "payments"})
	if err := c.Update(ctx, moved, client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}

	a := New(Options{Client: c, APIReader: c})
	stale.SetGroupVersionKind(HPAKind)
	out := a.converge(ctx, stale, freezeClaims(t, stale))
	if !out.wrote || len(out.failures) > 0 {
		t.Fatalf("converge: %+v", out)
	}
	if w := testutil.ToFloat64(a.Writes()); w != 2 {
		t.Errorf("%v writes, want 2 (the 409 and the retry)", w)
	}
	now := &unstructured.Unstructured{}
	now.SetGroupVersionKind(HPAKind)
	if err := c.Get(ctx, client.ObjectKeyFromObject(hpa), now); err != nil {
		t.Fatal(err)
	}
	if p, _ := lookup(now.Object, "/spec/behavior/scaleUp/selectPolicy"); p != disabled || now.GetLabels()["team"] != "payments" {
		t.Errorf("after the retry: selectPolicy %v, labels %v", p, now.GetLabels())
	}
}
