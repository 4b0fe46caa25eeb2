package kubernetes_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// consumerRoute is a GAMMA consumer route of checkout's calls in the
// fixture's namespace: parentRef the payments Service of namespace billing,
// with the three rules of checkoutRoute (to payments with retries set, to
// payments without, to ledger), its backends in billing.
func consumerRoute(f *fixture, name, billing string) *unstructured.Unstructured {
	return f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
	"metadata":{"name":"` + name + `","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"payments","namespace":"` + billing + `","port":8080}],"rules":[
	 {"name":"pay","matches":[{"path":{"type":"PathPrefix","value":"/pay"}}],
	  "backendRefs":[{"name":"payments","namespace":"` + billing + `","port":8080}],"retry":{"attempts":3,"backoff":"100ms","codes":[503]}},
	 {"name":"refund","matches":[{"path":{"type":"PathPrefix","value":"/refund"}}],
	  "backendRefs":[{"group":"","kind":"Service","name":"payments","namespace":"` + billing + `","port":8080}]},
	 {"name":"ledger","backendRefs":[{"name":"ledger","namespace":"` + billing + `","port":8080}],"retry":{"attempts":2}}]}}`)
}

// billing creates namespace billing-<suffix of the fixture's> with a
// payments Service, the parent of consumer routes.
func (f *fixture) billing() string {
	f.t.Helper()
	ns := "billing-" + strings.TrimPrefix(f.ns, "shop-")
	f.create(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`)
	f.create(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"payments","namespace":"` + ns + `"},
	"spec":{"selector":{"app":"payments"},"ports":[{"name":"http","port":8080}]}}`)
	return ns
}

// create creates an object as given (its own namespace, if any).
func (f *fixture) create(doc string) {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		f.t.Fatal(err)
	}
	if err := f.admin.Create(ctx(f.t), u); err != nil {
		f.t.Fatal(err)
	}
}

// capOffReleaseRestored: cap:2 → off (superseding) → release → release on
// a route with checkoutRoute's rules, each rule exactly as it was at the
// end (the absent retry absent again, the ledger rule never touched), and
// each application journaled on the route with whose calls it carries.
func capOffReleaseRestored(t *testing.T, f *fixture, route *unstructured.Unstructured, m kube.Mapping, instance, role string) {
	t.Helper()
	f.start(nil, m, instance)
	rules := func() string {
		now := f.get(route)
		return ruleRetry(now, 0) + " " + ruleRetry(now, 1) + " " + ruleRetry(now, 2)
	}
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "capped", func() (bool, string) {
		got := rules()
		return got == `{"attempts":1,"backoff":"100ms","codes":[503]} {"attempts":1} {"attempts":2}`, got
	})
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) {
		got := rules()
		return got == `{"attempts":0,"backoff":"100ms","codes":[503]} {"attempts":0} {"attempts":2}`, got
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "back to cap:2", func() (bool, string) {
		got := rules()
		return got == `{"attempts":1,"backoff":"100ms","codes":[503]} {"attempts":1} {"attempts":2}`, got
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "restored", func() (bool, string) {
		_, saved := f.get(route).GetAnnotations()[kube.SavedAnnotation]
		got := rules()
		return !saved && got == `{"attempts":3,"backoff":"100ms","codes":[503]} null {"attempts":2}`, got
	})
	applied := f.entries(journal.ActuationApplied) // cap:2, off, cap:2 again
	if len(applied) != 3 || slices.ContainsFunc(applied, func(e journal.Entry) bool {
		return e.Object != "httproute/"+route.GetName()+" in "+f.ns || e.Outcome != role
	}) {
		t.Errorf("journal: %s", js(applied))
	}
	if failed := f.entries(journal.ActuationFailed); len(failed) > 0 {
		t.Errorf("failures: %s", js(failed))
	}
}

// Gateway API v1.7.0 Standard (its own API server): retry.attempts accepts
// 0, which "MUST disable retries", so off is attempts 0 on a consumer route
// of payments, and everything is restored exactly. GRPCRoute there still has
// no retry: the API server drops one.
func TestHTTPRouteRetriesOffOnGatewayAPIV17Standard(t *testing.T) {
	f := newFixtureOn(t, kubeenv.StartOwned(t, "testdata/crds-gateway-v1.7-standard"))
	billing := f.billing()
	route := consumerRoute(f, "checkout-to-payments", billing)
	grpc := f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"GRPCRoute","metadata":{"name":"checkout-to-ledger"},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"ledger","namespace":"` + billing + `"}],
	"rules":[{"backendRefs":[{"name":"ledger","namespace":"` + billing + `","port":8080}],"retry":{"attempts":2}}]}}`)
	if rules, _, _ := unstructured.NestedSlice(f.get(grpc).Object, "spec", "rules"); len(rules) != 1 || js(rules[0].(map[string]any)["retry"]) != "null" {
		t.Errorf("GRPCRoute kept a retry in v1.7.0 Standard: %s", js(rules))
	}
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {HTTPRoute: []string{"checkout-to-payments"}}}}
	capOffReleaseRestored(t, f, route, m, "g17", "consumer route of service/payments in "+billing+": the callers in "+f.ns)
}
