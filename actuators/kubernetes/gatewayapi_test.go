package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// checkoutRoute is a GAMMA producer route of payments (parentRef the
// payments Service in the route's own namespace: every caller of payments
// obeys it) labelled as checkout's, with three rules: to payments with
// retries set, to payments without, and to ledger. A Gateway API mapping
// changes it only with payments named under gatewayAPIService.
func checkoutRoute(f *fixture, name string) *unstructured.Unstructured {
	return f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
	"metadata":{"name":"` + name + `","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"payments","port":8080}],"rules":[
	 {"name":"pay","matches":[{"path":{"type":"PathPrefix","value":"/pay"}}],"backendRefs":[{"name":"payments","port":8080}],
	  "retry":{"attempts":3,"backoff":"100ms","codes":[503]}},
	 {"name":"refund","matches":[{"path":{"type":"PathPrefix","value":"/refund"}}],"backendRefs":[{"group":"","kind":"Service","name":"payments","port":8080}]},
	 {"name":"ledger","backendRefs":[{"name":"ledger","port":8080}],"retry":{"attempts":2}}]}}`)
}

func ruleRetry(u *unstructured.Unstructured, i int) string {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	return js(rules[i].(map[string]any)["retry"])
}

// retries checkout->payments on a route with several rules, on Gateway API
// v1.6.1 (retry.attempts ≥ 1): cap:2 sets attempts 1 on exactly the rules to
// payments; off has no faithful mapping there and is refused with the
// reason, leaving cap:2; the release restores each rule exactly, keeps
// another writer's edit, and a rule splitting payments with ledger is
// refused rather than widened.
func TestHTTPRouteRetriesCappedRefusedAndRestored(t *testing.T) {
	f := newFixture(t)
	route := checkoutRoute(f, "checkout-to-payments")
	split := f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
	"metadata":{"name":"checkout-split","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"kind":"Service","name":"payments"}],"rules":[
	 {"backendRefs":[{"name":"payments","port":8080,"weight":90},{"name":"ledger","port":8080,"weight":10}],"retry":{"attempts":3}}]}}`)
	original := f.get(route)
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: []string{"payments"}}}}
	f.start(nil, m, "g1")

	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	eventually(t, "rules to payments capped", func() (bool, string) {
		now := f.get(route)
		got := ruleRetry(now, 0) + " " + ruleRetry(now, 1) + " " + ruleRetry(now, 2)
		return got == `{"attempts":1,"backoff":"100ms","codes":[503]} {"attempts":1} {"attempts":2}`, got
	})
	wantSplit := "checkout-split rule 0 sends to payments and to service/ledger"
	eventually(t, "split rule refused", func() (bool, string) {
		for _, e := range f.entries(journal.ActuationFailed) {
			if strings.Contains(e.Error, wantSplit) && strings.Contains(e.Error, "no faithful mapping") {
				return true, ""
			}
		}
		return false, js(f.entries(journal.ActuationFailed))
	})
	if got := ruleRetry(f.get(split), 0); got != `{"attempts":3}` {
		t.Errorf("the split rule was changed: %s", got)
	}

	// Another writer changes a sibling field the lever does not hold.
	patch := []byte(`[{"op":"replace","path":"/spec/rules/0/retry/backoff","value":"250ms"}]`)
	if err := f.admin.Patch(ctx(t), f.get(route), client.RawPatch(types.JSONPatchType, patch), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}

	off := f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off refused with the reason", func() (bool, string) {
		for _, e := range f.entries(journal.ActuationFailed) {
			if e.ActionID == off.ActionID && strings.Contains(e.Error, "requires retry.attempts ≥ 1") {
				return true, ""
			}
		}
		return false, js(f.entries(journal.ActuationFailed))
	})
	if got := ruleRetry(f.get(route), 0); got != `{"attempts":1,"backoff":"250ms","codes":[503]}` {
		t.Errorf("after off was refused: %s", got)
	}

	f.release(lever.Retries, "checkout->payments") // back to cap:2
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "each rule restored", func() (bool, string) {
		now := f.get(route)
		got := ruleRetry(now, 0) + " " + ruleRetry(now, 1) + " " + ruleRetry(now, 2)
		_, saved := now.GetAnnotations()[kube.SavedAnnotation]
		return !saved && got == `{"attempts":3,"backoff":"250ms","codes":[503]} null {"attempts":2}`, got
	})
	if a, b := ruleRetry(f.get(route), 2), ruleRetry(original, 2); a != b {
		t.Errorf("the ledger rule changed: %s, was %s", a, b)
	}
}

// On a Gateway API release whose retry.attempts accepts 0 (v1.5.1, its own
// API server), on checkoutRoute, a producer route of payments, which the
// mapping names for every caller: off is attempts 0, and everything is
// restored exactly.
func TestHTTPRouteRetriesOffOnGatewayAPIV15(t *testing.T) {
	f := newFixtureOn(t, kubeenv.StartOwned(t, "testdata/crds-gateway-v1.5"))
	route := checkoutRoute(f, "checkout-to-payments")
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {
		HTTPRoute: []string{"checkout-to-payments"}, GatewayAPIService: []string{"payments"}}}}
	capOffReleaseRestored(t, f, route, m, "g15", "producer route of service/payments: every caller of payments (gatewayAPIService)")
}

// The printed RBAC lets the actuator's ServiceAccount cap and restore an
// HTTPRoute.
func TestPrintedRBACCoversHTTPRoutes(t *testing.T) {
	f := newFixture(t)
	route := checkoutRoute(f, "checkout-to-payments")
	for _, doc := range strings.Split(kube.RBAC(f.ns, "stormctl-actuator"), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := f.admin.Create(ctx(t), u); err != nil {
			t.Fatalf("API server refused the printed %s: %v", u.GetKind(), err)
		}
	}
	sa, err := f.env.AddUser(envtest.User{Name: "system:serviceaccount:" + f.ns + ":stormctl-actuator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.start(sa.Config(), kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: []string{"payments"}}}}, "sa")
	f.apply(lever.Retries, "checkout->payments", "cap:3", 10*time.Minute)
	eventually(t, "capped by the ServiceAccount", func() (bool, string) {
		return ruleRetry(f.get(route), 1) == `{"attempts":2}`, js(f.entries(journal.ActuationFailed))
	})
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "restored by the ServiceAccount", func() (bool, string) {
		return ruleRetry(f.get(route), 1) == "null", ruleRetry(f.get(route), 1)
	})
}

// A cap that expires while no actuator runs is restored by the next one:
// every rule as it was, the absent retry absent again.
func TestHTTPRouteCapExpiredWhileStoppedRestored(t *testing.T) {
	f := newFixture(t)
	route := checkoutRoute(f, "checkout-to-payments")
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {GatewayAPI: true, GatewayAPIService: []string{"payments"}}}}
	first := f.start(nil, m, "e1")
	first.ready(t) // the TTL counts from here, not from a slow start
	l := f.apply(lever.Retries, "checkout->payments", "cap:2", 8*time.Second)
	eventually(t, "capped", func() (bool, string) {
		got := ruleRetry(f.get(route), 1)
		return got == `{"attempts":1}`, got
	})
	first.stop()
	time.Sleep(time.Until(l.ExpiresAt) + time.Second)
	if got := ruleRetry(f.get(route), 1); got != `{"attempts":1}` {
		t.Fatalf("changed with no actuator running: %s", got)
	}
	f.start(nil, m, "e2")
	eventually(t, "restored after expiry", func() (bool, string) {
		now := f.get(route)
		_, saved := now.GetAnnotations()[kube.SavedAnnotation]
		got := ruleRetry(now, 0) + " " + ruleRetry(now, 1) + " " + ruleRetry(now, 2)
		return !saved && got == `{"attempts":3,"backoff":"100ms","codes":[503]} null {"attempts":2}`, got
	})
	if r := f.journaled(journal.ActuationRestored, 1); len(r) != 1 || r[0].ActionID != l.ActionID {
		t.Errorf("restores journaled: %s", js(r))
	}
}
