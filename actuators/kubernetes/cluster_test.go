package kubernetes_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// An actuator whose Role lacks patch gets 403: the failure is journaled and
// shown in the status ("forbidden: patch hpa/checkout in <ns>"), and the
// lever stays in force.
func TestForbiddenJournaledLeverKept(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	user, err := f.env.AddUser(envtest.User{Name: "actuator-" + f.ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "actuator-no-patch", Namespace: f.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"keda.sh"}, Resources: []string{"scaledobjects"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.istio.io"}, Resources: []string{"virtualservices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "actuator-no-patch", Namespace: f.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "actuator-" + f.ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := f.admin.Create(ctx(t), o); err != nil {
			t.Fatal(err)
		}
	}
	f.start(user.Config(), kube.Mapping{}, "limited")
	l := f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	want := "forbidden: patch hpa/checkout in " + f.ns
	eventually(t, "403 journaled", func() (bool, string) {
		e := f.entries(journal.ActuationFailed)
		return len(e) == 1 && e[0].Error == want && e[0].ActionID == l.ActionID, js(e)
	})
	eventually(t, "403 in status", func() (bool, string) {
		st, err := f.store.Statuses(ctx(t), kube.Component)
		return err == nil && len(st) == 1 && len(st[0].Problems) == 1 && st[0].Problems[0] == want, js(st)
	})
	if cur, _, _, err := f.store.Get(ctx(t), lever.Autoscaling, "checkout"); err != nil || cur == nil || cur.ActionID != l.ActionID {
		t.Errorf("the lever did not stay: %v %v", cur, err)
	}
	if frozen(f.getHPA("checkout")) {
		t.Error("the HPA changed without patch rights")
	}
	seen, _, _ := f.store.Acks(ctx(t))
	if seen["autoscaling:checkout"] != 0 {
		t.Error("an actuator that could not apply the lever counts in seen by")
	}
}

// Two replicas elect one leader on the Lease; only it writes. When it
// stops, the other takes over and carries out the release.
func TestTwoReplicasOneActs(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	r1 := f.start(nil, kube.Mapping{}, "r1")
	r2 := f.start(nil, kube.Mapping{}, "r2")
	var holder string
	eventually(t, "a leader", func() (bool, string) {
		var lease coordinationv1.Lease
		if err := f.admin.Get(ctx(t), client.ObjectKey{Namespace: f.ns, Name: kube.LeaseName}, &lease); err != nil {
			return false, err.Error()
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "", holder
	})
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })
	w1, w2 := testutil.ToFloat64(r1.a.Writes()), testutil.ToFloat64(r2.a.Writes())
	if w1+w2 != 1 || (w1 > 0) == (w2 > 0) {
		t.Fatalf("want exactly one replica to write once: r1 %v, r2 %v", w1, w2)
	}
	leader, standby := r1, r2
	if w2 > 0 {
		leader, standby = r2, r1
	}
	leader.stop()
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "the standby restores", func() (bool, string) {
		h := f.getHPA("checkout")
		return h.Spec.Behavior == nil, js(h.Spec.Behavior)
	})
	if testutil.ToFloat64(standby.a.Writes()) != 1 {
		t.Errorf("standby wrote %v times, want 1", testutil.ToFloat64(standby.a.Writes()))
	}
}

// A mapping that names an object the cluster lacks, or a kind it does not
// serve, is reported as a failure of the lever, not silently ignored; the
// objects that do exist are still frozen.
func TestMissingObjectReported(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {HPA: []string{"checkout", "checkout-typo"}}}}
	f.start(nil, m, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen and the typo reported", func() (bool, string) {
		e := f.entries(journal.ActuationFailed)
		return frozen(f.getHPA("checkout")) && len(e) == 1 && e[0].Error == "not found: hpa/checkout-typo in "+f.ns, js(e)
	})
}
