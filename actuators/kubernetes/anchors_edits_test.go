package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// jsonPatch edits obj as another writer (kubectl-edit) would.
func (f *fixture) jsonPatch(obj *unstructured.Unstructured, patch string) {
	f.t.Helper()
	if err := f.admin.Patch(ctx(f.t), f.get(obj), client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
		f.t.Fatal(err)
	}
}

// steady pokes a pass and waits past it, then checks that the lever was
// applied once and never restored or in conflict: it holds without flapping.
func (f *fixture) steady(r *running, conflicts int) {
	f.t.Helper()
	r.a.Poke()
	time.Sleep(2 * time.Second)
	a, rs, c := f.entries(journal.ActuationApplied), f.entries(journal.ActuationRestored), f.entries(journal.ActuationConflict)
	if len(a) != 1 || len(rs) != 0 || len(c) != conflicts {
		f.t.Fatalf("the lever did not hold steadily: applied %d, restored %d, conflicts %s", len(a), len(rs), js(c))
	}
}

// While off holds isRetryable false on payments' retrying route, another
// writer inserts a route (its own, not retrying) before it: the saved
// pointer follows the held route by its name, the next passes change
// nothing, and the release gives that route its retries back while the
// inserted one keeps the other writer's values.
func TestServiceProfileRouteInsertedBeforeHeld(t *testing.T) {
	f := newFixture(t)
	sp := paymentsProfile(f)
	routes := func() string { return isRetryable(f, sp) }
	r := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {LinkerdService: []string{"payments"}}}}, "sp")
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) { got := routes(); return got == "false null false", got })

	f.jsonPatch(sp, `[{"op":"add","path":"/spec/routes/0","value":{"name":"GET /new","condition":{"method":"GET","pathRegex":"/new"},"isRetryable":false,"timeout":"300ms"}}]`)
	eventually(t, "the saved pointer follows the held route", func() (bool, string) {
		a := f.get(sp).GetAnnotations()[kube.SavedAnnotation]
		return strings.Contains(a, `"/spec/routes/1/isRetryable"`) && !strings.Contains(a, `"/spec/routes/0/isRetryable"`), a
	})
	f.steady(r, 0)
	if got := routes(); got != "false false null false" {
		t.Fatalf("routes after the insert: %s", got)
	}

	f.release(lever.Retries, "checkout->payments")
	eventually(t, "the held route restored", func() (bool, string) {
		got := routes()
		return got == "false true null false" && !saved(f.get(sp)), got
	})
	rs, _, _ := unstructured.NestedSlice(f.get(sp).Object, "spec", "routes")
	if got := js(rs[0]); got != `{"condition":{"method":"GET","pathRegex":"/new"},"isRetryable":false,"name":"GET /new","timeout":"300ms"}` {
		t.Errorf("the inserted route changed: %s", got)
	}
	if r := f.journaled(journal.ActuationRestored, 1); len(r) != 1 || js(r[0].Changes) != `[{"path":"/spec/routes/1/isRetryable","before":"false","after":"true"}]` {
		t.Errorf("restore journaled: %s", js(r))
	}
	if c := f.entries(journal.ActuationConflict); len(c) != 0 {
		t.Errorf("conflicts: %s", js(c))
	}
}

// Gateway API v1.7.0 (off is attempts 0) on a consumer route whose rules
// have no names: another writer inserts a rule to ledger before the held
// ones, and the held rules are found again by their content. Then the
// writer removes one held rule: that is a conflict naming it, and nothing
// else changes; the release restores the other held rule exactly and leaves
// the inserted rule as its writer left it.
func TestHTTPRouteRuleInsertedBeforeHeldAndRemoved(t *testing.T) {
	f := newFixtureOn(t, kubeenv.StartOwned(t, "testdata/crds-gateway-v1.7-standard"))
	billing := f.billing()
	route := f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"checkout-to-payments"},
	"spec":{"parentRefs":[{"group":"","kind":"Service","name":"payments","namespace":"` + billing + `","port":8080}],"rules":[
	 {"matches":[{"path":{"type":"PathPrefix","value":"/pay"}}],"backendRefs":[{"name":"payments","namespace":"` + billing + `","port":8080}],
	  "retry":{"attempts":3,"backoff":"100ms","codes":[503]}},
	 {"matches":[{"path":{"type":"PathPrefix","value":"/refund"}}],"backendRefs":[{"name":"payments","namespace":"` + billing + `","port":8080}]}]}}`)
	rules := func() string {
		rs, _, _ := unstructured.NestedSlice(f.get(route).Object, "spec", "rules")
		var parts []string
		for _, r := range rs {
			parts = append(parts, js(r.(map[string]any)["retry"]))
		}
		return strings.Join(parts, " ")
	}
	r := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {HTTPRoute: []string{"checkout-to-payments"}}}}, "g17")
	f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) {
		got := rules()
		return got == `{"attempts":0,"backoff":"100ms","codes":[503]} {"attempts":0}`, got
	})

	f.jsonPatch(route, `[{"op":"add","path":"/spec/rules/0","value":{"matches":[{"path":{"type":"PathPrefix","value":"/books"}}],
	 "backendRefs":[{"name":"ledger","namespace":"`+billing+`","port":8080}],"retry":{"attempts":4}}}]`)
	eventually(t, "the saved pointers follow the held rules", func() (bool, string) {
		a := f.get(route).GetAnnotations()[kube.SavedAnnotation]
		return strings.Contains(a, `"/spec/rules/1/retry"`) && strings.Contains(a, `"/spec/rules/2/retry"`) && !strings.Contains(a, `"/spec/rules/0/retry"`), a
	})
	f.steady(r, 0)
	if got := rules(); got != `{"attempts":4} {"attempts":0,"backoff":"100ms","codes":[503]} {"attempts":0}` {
		t.Fatalf("rules after the insert: %s", got)
	}

	f.jsonPatch(route, `[{"op":"remove","path":"/spec/rules/2"}]`)
	eventually(t, "the removed rule reported", func() (bool, string) {
		c := f.entries(journal.ActuationConflict)
		return len(c) == 1 && contains(c[0].Error, "the entry /spec/rules/2 the lever held was removed or cannot be told apart; left as it is"), js(c)
	})
	f.steady(r, 1)
	if got := rules(); got != `{"attempts":4} {"attempts":0,"backoff":"100ms","codes":[503]}` {
		t.Fatalf("rules after the removal: %s", got)
	}

	f.release(lever.Retries, "checkout->payments")
	eventually(t, "the held rule restored", func() (bool, string) {
		got := rules()
		return got == `{"attempts":4} {"attempts":3,"backoff":"100ms","codes":[503]}` && !saved(f.get(route)), got
	})
	if r := f.journaled(journal.ActuationRestored, 1); len(r) != 1 || js(r[0].Changes) != `[{"path":"/spec/rules/1/retry/attempts","before":"0","after":"3"}]` {
		t.Errorf("restore journaled: %s", js(r))
	}
}
