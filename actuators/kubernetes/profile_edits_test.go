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

// Another writer edits a ServiceProfile while off holds isRetryable false
// on its retrying route, as the Istio and HTTPRoute tests do for theirs:
// it changes the retryBudget and a sibling of the held field (the route's
// timeout), and appends a retrying route. The lever turns the new route's
// retries off too. Then the writer removes the held isRetryable: that is
// journaled as a conflict naming the field manager and not fought (later
// passes judge each route by its value before stormctl, so neither the
// route off turned false nor the removed field drops out of the lever). The
// release keeps every edit of the other writer (the removed field stays
// removed, reported again), gives the appended route back its retries and
// leaves the rest as it was.
func TestServiceProfileOtherWriterKept(t *testing.T) {
	f := newFixture(t)
	sp := paymentsProfile(f)
	routes := func() string { return isRetryable(f, sp) }
	edit := func(patch string) {
		t.Helper()
		if err := f.admin.Patch(ctx(t), f.get(sp), client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	}
	r := f.start(nil, kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {LinkerdService: []string{"payments"}}}}, "sp")
	off := f.apply(lever.Retries, "checkout->payments", lever.ValueOff, 10*time.Minute)
	eventually(t, "off", func() (bool, string) { got := routes(); return got == "false null false", got })
	r.a.Poke()
	time.Sleep(2 * time.Second) // later passes hold it: the route off turned false is still the lever's
	if a, rs := f.entries(journal.ActuationApplied), f.entries(journal.ActuationRestored); len(a) != 1 || len(rs) != 0 || routes() != "false null false" {
		t.Fatalf("off did not hold: %s, applied %d times, restored %d times", routes(), len(a), len(rs))
	}

	edit(`[{"op":"test","path":"/spec/routes/0/isRetryable","value":false},
	 {"op":"replace","path":"/spec/retryBudget/retryRatio","value":0.3},
	 {"op":"add","path":"/spec/routes/0/timeout","value":"500ms"},
	 {"op":"add","path":"/spec/routes/-","value":{"name":"POST /capture","condition":{"method":"POST","pathRegex":"/capture"},"isRetryable":true}}]`)
	eventually(t, "the appended route's retries off too", func() (bool, string) { got := routes(); return got == "false null false false", got })
	edit(`[{"op":"remove","path":"/spec/routes/0/isRetryable"}]`)
	eventually(t, "conflict journaled, naming the manager", func() (bool, string) {
		c := f.entries(journal.ActuationConflict)
		return len(c) == 1 && c[0].ActionID == off.ActionID && contains(c[0].Error, "/spec/routes/0/isRetryable is null, set by field manager kubectl-edit"), js(c)
	})
	r.a.Poke()
	time.Sleep(2 * time.Second)
	if got := routes(); got != "null null false false" {
		t.Errorf("the actuator fought the edit: %s", got)
	}

	f.release(lever.Retries, "checkout->payments")
	eventually(t, "released around the other writer's edits", func() (bool, string) {
		got := routes()
		return got == "null null false true" && !saved(f.get(sp)), got
	})
	now := f.get(sp)
	budget, _, _ := unstructured.NestedMap(now.Object, "spec", "retryBudget")
	rs, _, _ := unstructured.NestedSlice(now.Object, "spec", "routes")
	if js(budget) != `{"minRetriesPerSecond":10,"retryRatio":0.3,"ttl":"10s"}` || rs[0].(map[string]any)["timeout"] != "500ms" {
		t.Errorf("the other writer's edits were lost: budget %s, route 0 %s", js(budget), js(rs[0]))
	}
	eventually(t, "the field left on release journaled", func() (bool, string) {
		c := f.entries(journal.ActuationConflict)
		return len(c) == 2 && contains(c[1].Error, "left as it is on release") && contains(c[1].Error, "kubectl-edit"), js(c)
	})
	if r := f.journaled(journal.ActuationRestored, 1); len(r) != 1 || js(r[0].Changes) != `[{"path":"/spec/routes/3/isRetryable","before":"false","after":"true"}]` {
		t.Errorf("restore journaled: %s", js(r))
	}
}

// paymentsProfile creates payments' ServiceProfile: a retryBudget and three
// routes, retrying, unset and not retrying.
func paymentsProfile(f *fixture) *unstructured.Unstructured {
	return f.object(`{"apiVersion":"linkerd.io/v1alpha2","kind":"ServiceProfile","metadata":{"name":"payments.` + f.ns + `.svc.cluster.local"},
	"spec":{"retryBudget":{"retryRatio":0.2,"minRetriesPerSecond":10,"ttl":"10s"},"routes":[
	 {"name":"POST /pay","condition":{"method":"POST","pathRegex":"/pay"},"isRetryable":true},
	 {"name":"GET /status","condition":{"method":"GET","pathRegex":"/status"}},
	 {"name":"POST /refund","condition":{"method":"POST","pathRegex":"/refund"},"isRetryable":false}]}}`)
}

// isRetryable is each route's isRetryable as the API server has it ("null":
// unset), in order.
func isRetryable(f *fixture, sp *unstructured.Unstructured) string {
	rs, _, _ := unstructured.NestedSlice(f.get(sp).Object, "spec", "routes")
	var parts []string
	for _, r := range rs {
		parts = append(parts, js(r.(map[string]any)["isRetryable"]))
	}
	return strings.Join(parts, " ")
}
