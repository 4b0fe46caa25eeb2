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

// The RBAC that --print-rbac prints is accepted by the API server and is
// enough: an actuator running as that ServiceAccount, and nothing more,
// elects itself, freezes and restores.
func TestPrintedRBACSuffices(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	for _, doc := range strings.Split(kube.RBAC(f.ns, "stormctl-actuator"), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("printed RBAC is not YAML: %v\n%s", err, doc)
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
	f.start(sa.Config(), kube.Mapping{}, "sa")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen by the ServiceAccount", func() (bool, string) {
		h := f.getHPA("checkout")
		return frozen(h), js(f.entries(journal.ActuationFailed))
	})
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "restored by the ServiceAccount", func() (bool, string) {
		h := f.getHPA("checkout")
		return h.Spec.Behavior == nil, js(h.Spec.Behavior)
	})
}
