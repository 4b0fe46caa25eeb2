package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// service creates a core Service with the given annotations (JSON object).
func (f *fixture) service(name, annotations string) *unstructured.Unstructured {
	return f.object(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","annotations":` + annotations + `},
	"spec":{"selector":{"app":"` + name + `"},"ports":[{"name":"http","port":8080}]}}`)
}

// retryAnns is an object's Linkerd retry annotations, in a fixed order.
func retryAnns(u *unstructured.Unstructured) string {
	var parts []string
	for _, k := range []string{"http", "grpc", "limit", "timeout"} {
		if v, ok := u.GetAnnotations()["retry.linkerd.io/"+k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func saved(u *unstructured.Unstructured) bool {
	_, ok := u.GetAnnotations()[kube.SavedAnnotation]
	return ok
}

// failedWith waits for an actuation.failed entry containing want.
func (f *fixture) failedWith(want string) {
	f.t.Helper()
	eventually(f.t, "failure "+want, func() (bool, string) {
		for _, e := range f.entries(journal.ActuationFailed) {
			if strings.Contains(e.Error, want) {
				return true, ""
			}
		}
		return false, js(f.entries(journal.ActuationFailed))
	})
}

// A Linkerd Service without a ServiceProfile: cap:2 → limit 1; off
// (superseding) removes every retry annotation; release goes back to cap:2,
// then to exactly what was there, another writer's timeout kept. Other
// annotations and another Service are never touched.
func TestLinkerdServiceAnnotationsCapOffRestored(t *testing.T) {
	f := newFixture(t)
	pay := f.service("payments", `{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3","retry.linkerd.io/timeout":"300ms","team":"pay"}`)
	ledger := f.service("ledger", `{"retry.linkerd.io/http":"5xx"}`)
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {LinkerdService: []string{"payments"}}}}, "l1")
	want := func(what, anns string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			got := retryAnns(f.get(pay))
			return got == anns, got
		})
	}
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	want("capped", "http=5xx limit=1 timeout=300ms")
	eventually(t, `"seen by" counts the Service`, func() (bool, string) {
		st, err := f.store.Statuses(ctx(t), kube.Component)
		return err == nil && len(st) == 1 && len(st[0].Holds) == 1 && js(st[0].Holds["retries:checkout->payments"]) == `{"service":1}`, js(st)
	})
	patch := []byte(`{"metadata":{"annotations":{"retry.linkerd.io/timeout":"500ms"}}}`)
	if err := f.admin.Patch(ctx(t), f.get(pay), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-annotate")); err != nil {
		t.Fatal(err)
	}
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	want("off", "")
	f.release(lever.Retries, "checkout->payments")
	want("back to cap:2", "http=5xx limit=1 timeout=500ms")
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "restored", func() (bool, string) {
		now := f.get(pay)
		return !saved(now) && retryAnns(now) == "http=5xx limit=3 timeout=500ms" && now.GetAnnotations()["team"] == "pay", js(now.GetAnnotations())
	})
	if got := retryAnns(f.get(ledger)); got != "http=5xx" || saved(f.get(ledger)) {
		t.Errorf("ledger changed: %s", got)
	}
}

// Where a ServiceProfile exists Linkerd uses it instead: off sets
// isRetryable false on the routes that retry (absent stays absent, the
// Service's annotations and the retryBudget untouched); cap:2 has no
// faithful mapping in a budget and is refused; release restores each route.
func TestLinkerdServiceProfileOffRestored(t *testing.T) {
	f := newFixture(t)
	pay := f.service("payments", `{"retry.linkerd.io/http":"5xx"}`)
	sp := paymentsProfile(f)
	routes := func() string { return isRetryable(f, sp) }
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {LinkerdService: []string{"payments"}}}}, "sp")
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	f.failedWith("bounds retries by its retryBudget")
	if got := routes(); got != "true null false" {
		t.Fatalf("cap:2 changed the profile: %s", got)
	}
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) { got := routes(); return got == "false null false", got })
	if got := retryAnns(f.get(pay)); got != "http=5xx" {
		t.Errorf("the Service's annotations changed under a profile: %s", got)
	}
	f.release(lever.Retries, "checkout->payments")
	f.release(lever.Retries, "checkout->payments")
	eventually(t, "restored", func() (bool, string) {
		got := routes()
		return got == "true null false" && !saved(f.get(sp)), got
	})
	budget, _, _ := unstructured.NestedMap(f.get(sp).Object, "spec", "retryBudget")
	if js(budget) != `{"minRetriesPerSecond":10,"retryRatio":0.2,"ttl":"10s"}` {
		t.Errorf("retryBudget: %s", js(budget))
	}
}

// Routes win over their Service. checkout's routes are producer routes
// (their parent Services are in their own namespace). One of payments, with
// annotations of its own (a Gateway API HTTPRoute with three rules), is
// changed because payments is named under linkerdService: cap:2 sets its
// limit, off removes them, release restores them exactly, and the Gateway
// API retry is never touched. A GRPCRoute of ledger without annotations,
// inheriting its Service's, is not named: cap:2 (which would copy them onto
// it) is refused as a producer route, off as before (no annotation would mean
// the Service's retries), and it is never changed. A route whose Service has
// a ServiceProfile is refused: Linkerd ignores its annotations.
func TestLinkerdRoutesCapOffRestored(t *testing.T) {
	f := newFixture(t)
	f.service("payments", `{}`)
	ledger := f.service("ledger", `{"retry.linkerd.io/grpc":"unavailable","retry.linkerd.io/limit":"4"}`)
	f.service("inventory", `{}`)
	f.object(`{"apiVersion":"linkerd.io/v1alpha2","kind":"ServiceProfile","metadata":{"name":"inventory.` + f.ns + `.svc.cluster.local"},
	"spec":{"routes":[{"name":"GET /items","condition":{"method":"GET","pathRegex":"/items"},"isRetryable":true}]}}`)
	route := checkoutRoute(f, "checkout-to-payments")
	own := []byte(`{"metadata":{"annotations":{"retry.linkerd.io/http":"5xx,429","retry.linkerd.io/limit":"3"}}}`)
	if err := f.admin.Patch(ctx(t), f.get(route), client.RawPatch(types.MergePatchType, own), client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}
	grpc := f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"GRPCRoute","metadata":{"name":"checkout-to-ledger","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"ledger","port":8080}],"rules":[{"backendRefs":[{"name":"ledger","port":8080}]}]}}`)
	f.object(`{"apiVersion":"policy.linkerd.io/v1beta3","kind":"HTTPRoute","metadata":{"name":"checkout-to-inventory","labels":{"app":"checkout"},
	"annotations":{"retry.linkerd.io/http":"5xx"}},"spec":{"parentRefs":[{"group":"core","kind":"Service","name":"inventory","port":8080}],
	"rules":[{"backendRefs":[{"name":"inventory","port":8080}]}]}}`)
	f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {Linkerd: true, LinkerdService: []string{"payments"}}}}, "lr")
	both := func() string {
		g := f.get(grpc)
		return retryAnns(f.get(route)) + " | " + retryAnns(g) + js(g.GetAnnotations()[kube.SavedAnnotation])
	}

	f.apply(lever.Retries, "checkout", "cap:2", 10*time.Minute)
	eventually(t, "capped", func() (bool, string) {
		got := both()
		return got == `http=5xx,429 limit=1 | ""`, got
	})
	f.failedWith("grpcroute/checkout-to-ledger is a producer route of service/ledger (its parentRef is in the route's own namespace, " + f.ns +
		"), so its retry annotations apply to every caller of ledger, not only checkout's calls: no faithful mapping of checkout cap:2 in Linkerd; " +
		"name ledger under linkerdService to change it for every caller")
	f.failedWith("ignores the retry annotations of its routes")
	f.apply(lever.Retries, "checkout", lever.ValueOff, 10*time.Minute)
	f.failedWith(`no "no retries" in Linkerd for a route whose Service retries`)
	eventually(t, "off where it can be said", func() (bool, string) {
		got := both()
		return got == ` | ""`, got
	})
	f.release(lever.Retries, "checkout")
	f.release(lever.Retries, "checkout")
	eventually(t, "restored", func() (bool, string) {
		got := both()
		return got == `http=5xx,429 limit=3 | ""` && !saved(f.get(route)), got
	})
	if got := ruleRetry(f.get(route), 0); got != `{"attempts":3,"backoff":"100ms","codes":[503]}` {
		t.Errorf("Linkerd's lever changed the Gateway API retry: %s", got)
	}
	if got := retryAnns(f.get(ledger)); got != "grpc=unavailable limit=4" || saved(f.get(ledger)) {
		t.Errorf("ledger's Service changed: %s", got)
	}
}
