package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// An actuator running as the ServiceAccount of the printed RBAC, and
// nothing more, caps a Linkerd Service's retries and an Envoy Gateway
// policy's; the cap expires while no actuator runs, and the next one
// restores both exactly.
func TestPrintedRBACLinkerdEnvoyExpiredWhileStopped(t *testing.T) {
	f := newFixture(t)
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
	pay := f.service("payments", `{"retry.linkerd.io/http":"gateway-error"}`)
	f.object(`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"checkout-pay"},
	"spec":{"parentRefs":[{"name":"edge"}],"rules":[{"backendRefs":[{"name":"payments","port":8080}]}]}}`)
	policy := f.btp("checkout-pay", `[{"group":"gateway.networking.k8s.io","kind":"HTTPRoute","name":"checkout-pay"}]`, `{"numRetries":3}`)
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {LinkerdService: []string{"payments"}, BackendTrafficPolicy: []string{"checkout-pay"}}}}
	first := f.start(sa.Config(), m, "x1")
	first.ready(t) // the TTL counts from here, not from a slow start
	l := f.apply(lever.Retries, "checkout->payments", "cap:2", 8*time.Second)
	eventually(t, "capped by the ServiceAccount", func() (bool, string) {
		got := retryAnns(f.get(pay)) + " " + retryOf(f.get(policy))
		return got == `http=gateway-error limit=1 {"numRetries":1}`, got + " " + js(f.entries(journal.ActuationFailed))
	})
	first.stop()
	time.Sleep(time.Until(l.ExpiresAt) + time.Second)
	if got := retryAnns(f.get(pay)); got != "http=gateway-error limit=1" {
		t.Fatalf("changed with no actuator running: %s", got)
	}
	f.start(sa.Config(), m, "x2")
	eventually(t, "restored after expiry", func() (bool, string) {
		got := retryAnns(f.get(pay)) + " " + retryOf(f.get(policy))
		return got == `http=gateway-error {"numRetries":3}` && !saved(f.get(pay)) && !saved(f.get(policy)), got
	})
	if r := f.journaled(journal.ActuationRestored, 2); len(r) != 2 || r[0].ActionID != l.ActionID {
		t.Errorf("restores journaled: %s", js(r))
	}
	if e := f.entries(journal.ActuationFailed); len(e) != 0 {
		t.Errorf("failures: %s", js(e))
	}
}
