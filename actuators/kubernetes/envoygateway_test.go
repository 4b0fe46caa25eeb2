package kubernetes_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/lever"
)

// btp creates a BackendTrafficPolicy of checkout attached to targets (a
// JSON array), with retry (a JSON object, or "" for none).
func (f *fixture) btp(name, targets, retry string) *unstructured.Unstructured {
	spec := `"targetRefs":` + targets
	if retry != "" {
		spec += `,"retry":` + retry
	}
	return f.object(`{"apiVersion":"gateway.envoyproxy.io/v1alpha1","kind":"BackendTrafficPolicy",
	"metadata":{"name":"` + name + `","labels":{"app":"checkout"}},"spec":{` + spec + `}}`)
}

func retryOf(u *unstructured.Unstructured) string {
	r, _, _ := unstructured.NestedMap(u.Object, "spec", "retry")
	return js(r)
}

// Envoy Gateway: retries checkout->payments changes spec.retry.numRetries of
// exactly the policies whose targets carry calls to payments alone (a route
// whose rules all go to payments; one named rule of a route with several);
// a policy on a Gateway or on a route that also sends to ledger is refused,
// one without retry is left. cap:2 → off (superseding) → release → release
// restores each, another writer's edit kept.
func TestBackendTrafficPolicyCapOffRestored(t *testing.T) {
	f := newFixture(t)
	checkoutRoute(f, "checkout-mixed")
	f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"checkout-pay"},
	"spec":{"parentRefs":[{"name":"edge"}],"rules":[{"backendRefs":[{"name":"payments","port":8080}]},
	 {"matches":[{"path":{"type":"PathPrefix","value":"/v2"}}],"backendRefs":[{"name":"payments","port":8080}]}]}}`)
	route := `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"checkout-pay"}]`
	whole := f.btp("checkout-pay", route, `{"numRetries":3,"retryOn":{"httpStatusCodes":[503]},"perRetry":{"timeout":"250ms"}}`)
	rule := f.btp("checkout-refund", `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"checkout-mixed","sectionName":"refund"}]`,
		`{"retryOn":{"triggers":["connect-failure"]}}`)
	mixed := f.btp("checkout-mixed", `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"checkout-mixed"}]`, `{"numRetries":5}`)
	gw := f.btp("checkout-edge", `[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"edge"}]`, `{"numRetries":4}`)
	none := f.btp("checkout-timeouts", route, "")
	originalRule := retryOf(f.get(rule)) // numRetries defaulted to 2 by the CRD
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {EnvoyGateway: true}}}, "eg")
	state := func() string { return retryOf(f.get(whole)) + " " + retryOf(f.get(rule)) }

	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "capped", func() (bool, string) {
		got := state()
		return got == `{"numRetries":1,"perRetry":{"timeout":"250ms"},"retryOn":{"httpStatusCodes":[503]}} {"numRetries":1,"retryOn":{"triggers":["connect-failure"]}}`, got
	})
	f.failedWith("backendtrafficpolicy/checkout-mixed covers rules to payments and rules to other backends")
	f.failedWith("backendtrafficpolicy/checkout-edge is attached to gateway edge, whose every route it covers")
	patch := []byte(`{"spec":{"retry":{"perRetry":{"timeout":"1s"}}}}`)
	if err := f.admin.Patch(ctx(t), f.get(whole), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) {
		got := state()
		return got == `{"numRetries":0,"perRetry":{"timeout":"1s"},"retryOn":{"httpStatusCodes":[503]}} {"numRetries":0,"retryOn":{"triggers":["connect-failure"]}}`, got
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "back to cap:2", func() (bool, string) {
		got := retryOf(f.get(whole))
		return got == `{"numRetries":1,"perRetry":{"timeout":"1s"},"retryOn":{"httpStatusCodes":[503]}}`, got
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "restored", func() (bool, string) {
		got := state()
		return got == `{"numRetries":3,"perRetry":{"timeout":"1s"},"retryOn":{"httpStatusCodes":[503]}} `+originalRule &&
			!saved(f.get(whole)) && !saved(f.get(rule)), got
	})
	for u, want := range map[*unstructured.Unstructured]string{mixed: `{"numRetries":5}`, gw: `{"numRetries":4}`, none: "null"} {
		if got := retryOf(f.get(u)); got != want || saved(f.get(u)) {
			t.Errorf("%s changed: %s", u.GetName(), got)
		}
	}
}
