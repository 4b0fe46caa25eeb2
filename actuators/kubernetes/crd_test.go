package kubernetes_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// object creates a custom resource from its YAML-equivalent JSON, validated
// by the real CRD's schema.
func (f *fixture) object(doc string) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		f.t.Fatal(err)
	}
	u.SetNamespace(f.ns)
	if err := f.admin.Create(ctx(f.t), u, client.FieldOwner("helm")); err != nil {
		f.t.Fatal(err)
	}
	return u
}

func (f *fixture) get(like *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(like.GroupVersionKind())
	if err := f.admin.Get(ctx(f.t), client.ObjectKeyFromObject(like), u); err != nil {
		f.t.Fatal(err)
	}
	return u
}

// A frozen service's KEDA ScaledObject (named in the mapping) is paused with
// KEDA's annotation and unpaused on release; its other annotations stay.
func TestScaledObjectPausedAndUnpaused(t *testing.T) {
	f := newFixture(t)
	so := f.object(`{"apiVersion":"keda.sh/v1alpha1","kind":"ScaledObject",
	"metadata":{"name":"checkout-worker","annotations":{"team":"payments"}},
	"spec":{"scaleTargetRef":{"name":"checkout-worker"},"minReplicaCount":2,"maxReplicaCount":40,
	 "triggers":[{"type":"prometheus","metadata":{"serverAddress":"http://prometheus.monitoring:9090",
	  "query":"sum(rate(stormctl_requests_total{service=\"checkout\"}[1m]))","threshold":"100"}}]}}`)
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {ScaledObject: []string{"checkout-worker"}}}}
	f.start(nil, m, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "paused", func() (bool, string) {
		a := f.get(so).GetAnnotations()
		return a["autoscaling.keda.sh/paused"] == "true", js(a)
	})
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "unpaused", func() (bool, string) {
		a := f.get(so).GetAnnotations()
		_, paused := a["autoscaling.keda.sh/paused"]
		_, saved := a[kube.SavedAnnotation]
		return !paused && !saved && a["team"] == "payments", js(a)
	})
	// The pass journals what it changed after it has patched the object.
	eventually(t, "restore journaled once", func() (bool, string) {
		r := f.entries(journal.ActuationRestored)
		return len(r) == 1, js(r)
	})
}

// retries checkout->payments on a meshed service sets retries.attempts on
// the caller's VirtualService routes to payments only (cap:N → N−1, off →
// 0) and restores the previous retries exactly on release.
func TestVirtualServiceRetriesSetAndRestored(t *testing.T) {
	f := newFixture(t)
	vs := f.object(`{"apiVersion":"networking.istio.io/v1","kind":"VirtualService",
	"metadata":{"name":"checkout-egress","labels":{"app":"checkout"}},
	"spec":{"hosts":["payments","ledger"],"http":[
	 {"name":"payments","match":[{"uri":{"prefix":"/pay"}}],"route":[{"destination":{"host":"payments.` + f.ns + `.svc.cluster.local","port":{"number":8080}}}],
	  "retries":{"attempts":3,"perTryTimeout":"2s","retryOn":"5xx,reset,connect-failure"}},
	 {"name":"ledger","route":[{"destination":{"host":"ledger"}}]}]}}`)
	original := f.get(vs)
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {Istio: true}}}
	f.start(nil, m, "a1")
	retries := func(u *unstructured.Unstructured, i int) any {
		routes, _, _ := unstructured.NestedSlice(u.Object, "spec", "http")
		return routes[i].(map[string]any)["retries"]
	}
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "payments route capped", func() (bool, string) {
		r := retries(f.get(vs), 0)
		return js(r) == `{"attempts":1,"perTryTimeout":"2s","retryOn":"5xx,reset,connect-failure"}`, js(r)
	})
	if r := retries(f.get(vs), 1); r != nil {
		t.Errorf("the ledger route was changed: %s", js(r))
	}
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "payments retries off", func() (bool, string) {
		r := retries(f.get(vs), 0)
		return js(r) == `{"attempts":0,"perTryTimeout":"2s","retryOn":"5xx,reset,connect-failure"}`, js(r)
	})
	// Releasing "off" restores the cap:2 it superseded, then releasing that
	// restores the route as it was before stormctl.
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "back to cap:2", func() (bool, string) {
		r := retries(f.get(vs), 0)
		return js(r) == `{"attempts":1,"perTryTimeout":"2s","retryOn":"5xx,reset,connect-failure"}`, js(r)
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "retries restored", func() (bool, string) {
		now := f.get(vs)
		a, b := js(retries(now, 0)), js(retries(original, 0))
		_, saved := now.GetAnnotations()[kube.SavedAnnotation]
		return a == b && !saved && retries(now, 1) == nil, a + " want " + b
	})
}
