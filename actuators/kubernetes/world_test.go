package kubernetes_test

import (
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
)

// kindsWorld is one object of every retry kind beyond Istio's, for two
// dependencies each, so a lever on one dependency reaches one object of
// each kind and leaves the other's alone:
//
//   - httproute/checkout-mesh (Gateway API, labelled checkout): a rule to
//     payments and one to inventory, each with retry.attempts 3;
//   - service/payments and service/inventory with Linkerd's retry
//     annotations (limit 3);
//   - the ServiceProfiles of ledger and orders, whose routes retry;
//   - backendtrafficpolicy/pay-policy and inv-policy (labelled checkout) on
//     routes to payments and to inventory alone, numRetries 3.
type kindsWorld struct {
	f                   *fixture
	route               *unstructured.Unstructured
	payments, inventory *unstructured.Unstructured
	ledger, orders      *unstructured.Unstructured
	payPolicy, invPol   *unstructured.Unstructured
	created             map[string]string // object → spec and annotations as created
}

// kindsMapping routes checkout's retries through all of them.
var kindsMapping = kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {
	GatewayAPI: true, EnvoyGateway: true, LinkerdService: []string{"payments", "inventory", "ledger", "orders"}}}}

func newKindsWorld(f *fixture) *kindsWorld {
	w := &kindsWorld{f: f}
	w.route = f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
	"metadata":{"name":"checkout-mesh","labels":{"app":"checkout"}},
	"spec":{"parentRefs":[{"name":"mesh-edge"}],"rules":[
	 {"name":"pay","matches":[{"path":{"type":"PathPrefix","value":"/pay"}}],"backendRefs":[{"name":"payments","port":8080}],
	  "retry":{"attempts":3,"backoff":"100ms","codes":[503]}},
	 {"name":"inv","matches":[{"path":{"type":"PathPrefix","value":"/inv"}}],"backendRefs":[{"name":"inventory","port":8080}],
	  "retry":{"attempts":3}}]}}`)
	w.payments = f.service("payments", `{"retry.linkerd.io/http":"5xx","retry.linkerd.io/limit":"3","team":"pay"}`)
	w.inventory = f.service("inventory", `{"retry.linkerd.io/http":"5xx,429","retry.linkerd.io/limit":"3"}`)
	profile := func(name string) *unstructured.Unstructured {
		return f.object(`{"apiVersion":"linkerd.io/v1alpha2","kind":"ServiceProfile","metadata":{"name":"` + name + `.` + f.ns + `.svc.cluster.local"},
		"spec":{"retryBudget":{"retryRatio":0.2,"minRetriesPerSecond":10,"ttl":"10s"},"routes":[
		 {"name":"GET /` + name + `","condition":{"method":"GET","pathRegex":"/` + name + `"},"isRetryable":true},
		 {"name":"POST /` + name + `","condition":{"method":"POST","pathRegex":"/` + name + `"}}]}}`)
	}
	w.ledger, w.orders = profile("ledger"), profile("orders")
	for _, to := range []string{"payments", "inventory"} {
		f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"edge-` + to + `"},
		"spec":{"parentRefs":[{"name":"edge"}],"rules":[{"backendRefs":[{"name":"` + to + `","port":8080}]}]}}`)
	}
	w.payPolicy = f.btp("pay-policy", `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"edge-payments"}]`, `{"numRetries":3,"perRetry":{"timeout":"250ms"}}`)
	w.invPol = f.btp("inv-policy", `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"edge-inventory"}]`, `{"numRetries":3}`)
	w.created = w.snapshot()
	return w
}

func (w *kindsWorld) all() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{w.route, w.payments, w.inventory, w.ledger, w.orders, w.payPolicy, w.invPol}
}

// snapshot is each object's spec and annotations as the API server has them.
func (w *kindsWorld) snapshot() map[string]string {
	out := map[string]string{}
	for _, u := range w.all() {
		now := w.f.get(u)
		out[now.GetKind()+"/"+now.GetName()] = js(now.Object["spec"]) + " " + js(now.GetAnnotations())
	}
	return out
}

// versions is each object's resourceVersion: unchanged means never written.
func (w *kindsWorld) versions() string {
	var parts []string
	for _, u := range w.all() {
		parts = append(parts, w.f.get(u).GetResourceVersion())
	}
	return strings.Join(parts, " ")
}

// state says, per object, what the levers change: the route's two rules'
// attempts, the Services' retry annotations, the profiles' isRetryable and
// the policies' numRetries, with "*" on an object carrying the saved
// annotation.
func (w *kindsWorld) state() string {
	mark := func(u *unstructured.Unstructured, s string) string {
		if saved(u) {
			return s + "*"
		}
		return s
	}
	route := w.f.get(w.route)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	var attempts []string
	for _, r := range rules {
		n, _, _ := unstructured.NestedInt64(r.(map[string]any), "retry", "attempts")
		attempts = append(attempts, js(n))
	}
	parts := []string{"route " + mark(route, strings.Join(attempts, ","))}
	for _, svc := range []*unstructured.Unstructured{w.payments, w.inventory} {
		now := w.f.get(svc)
		parts = append(parts, svc.GetName()+" "+mark(now, retryAnns(now)))
	}
	for _, sp := range []*unstructured.Unstructured{w.ledger, w.orders} {
		now := w.f.get(sp)
		routes, _, _ := unstructured.NestedSlice(now.Object, "spec", "routes")
		var rs []string
		for _, r := range routes {
			rs = append(rs, js(r.(map[string]any)["isRetryable"]))
		}
		name, _, _ := strings.Cut(sp.GetName(), ".")
		parts = append(parts, name+" "+mark(now, strings.Join(rs, ",")))
	}
	for _, p := range []*unstructured.Unstructured{w.payPolicy, w.invPol} {
		now := w.f.get(p)
		n, _, _ := unstructured.NestedInt64(now.Object, "spec", "retry", "numRetries")
		parts = append(parts, p.GetName()+" "+mark(now, js(n)))
	}
	return strings.Join(parts, " | ")
}

// The states of kindsWorld: as created, and with each dependency's lever
// held (payments and inventory cap:2, ledger and orders off).
const (
	worldAsCreated = "route 3,3 | payments http=5xx limit=3 | inventory http=5xx,429 limit=3 | ledger true,null | orders true,null | pay-policy 3 | inv-policy 3"
	worldPayLedger = "route 1,3* | payments http=5xx limit=1* | inventory http=5xx,429 limit=3 | ledger false,null* | orders true,null | pay-policy 1* | inv-policy 3"
	worldInvOrders = "route 3,1* | payments http=5xx limit=3 | inventory http=5xx,429 limit=1* | ledger true,null | orders false,null* | pay-policy 3 | inv-policy 1*"
)

// restoredExactly says which objects differ from how they were created.
func (w *kindsWorld) restoredExactly() (bool, string) {
	now := w.snapshot()
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(w.created)) {
		if now[k] != w.created[k] {
			diff = append(diff, k+": "+now[k]+" was "+w.created[k])
		}
	}
	return len(diff) == 0, strings.Join(diff, "; ")
}

// printedRBAC creates what --print-rbac prints for ServiceAccount
// stormctl-actuator, but with the Role lacking the verbs drop names per
// resource ("group/resource" → verbs; a resource left without verbs is
// dropped), as for an actuator upgraded before its RBAC was re-applied. It
// returns the ServiceAccount's credentials and a function that re-applies
// the printed Role.
func (f *fixture) printedRBAC(drop map[string][]string) (cfg *rest.Config, reapply func()) {
	f.t.Helper()
	var printed *rbacv1.Role
	for _, doc := range strings.Split(kube.RBAC(f.ns, "stormctl-actuator"), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			f.t.Fatal(err)
		}
		if u.GetKind() == "Role" {
			printed = &rbacv1.Role{}
			if err := yaml.Unmarshal([]byte(doc), printed); err != nil {
				f.t.Fatal(err)
			}
			continue
		}
		if err := f.admin.Create(ctx(f.t), u); err != nil {
			f.t.Fatalf("API server refused the printed %s: %v", u.GetKind(), err)
		}
	}
	if printed == nil {
		f.t.Fatal("--print-rbac printed no Role")
	}
	limited := printed.DeepCopy()
	limited.Rules = nil
	for _, r := range printed.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return slices.Contains(drop[g+"/"+res], v) })
				if len(verbs) > 0 {
					limited.Rules = append(limited.Rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: verbs})
				}
			}
		}
	}
	if err := f.admin.Create(ctx(f.t), limited); err != nil {
		f.t.Fatal(err)
	}
	sa, err := f.env.AddUser(envtest.User{Name: "system:serviceaccount:" + f.ns + ":stormctl-actuator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"}}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return sa.Config(), func() {
		f.t.Helper()
		now := &rbacv1.Role{}
		if err := f.admin.Get(ctx(f.t), client.ObjectKey{Namespace: f.ns, Name: printed.Name}, now); err != nil {
			f.t.Fatal(err)
		}
		now.Rules = printed.Rules
		if err := f.admin.Update(ctx(f.t), now); err != nil {
			f.t.Fatal(err)
		}
	}
}
