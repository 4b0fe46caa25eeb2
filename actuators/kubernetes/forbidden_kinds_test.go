package kubernetes_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// An actuator whose Role may read but not patch HTTPRoutes, Services,
// ServiceProfiles and BackendTrafficPolicies (the printed Role without
// those patches) gets 403 on each: every object is named with the verb in
// one actuation.failed per lever and object and in the status, nothing is
// written, the levers stay in force and are not acknowledged. Once the
// printed Role is re-applied the next passes apply both levers, the
// problems clear, and the releases restore every object exactly.
func TestForbiddenPatchOnEveryRetryKind(t *testing.T) {
	f := newFixture(t)
	w := newKindsWorld(f)
	cfg, reapply := f.printedRBAC(map[string][]string{
		"gateway.networking.k8s.io/httproutes":         {"patch"},
		"/services":                                    {"patch"},
		"linkerd.io/serviceprofiles":                   {"patch"},
		"gateway.envoyproxy.io/backendtrafficpolicies": {"patch"},
	})
	rvs := w.versions()
	r := f.start(cfg, kindsMapping, "nopatch")
	pay := f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	led := f.apply(lever.Retries, "checkout->ledger", lever.ValueOff, 10*time.Minute)
	want := []string{
		pay.ActionID + " forbidden: patch backendtrafficpolicy/pay-policy in " + f.ns,
		pay.ActionID + " forbidden: patch httproute/checkout-mesh in " + f.ns,
		pay.ActionID + " forbidden: patch service/payments in " + f.ns,
		led.ActionID + " forbidden: patch serviceprofile/ledger." + f.ns + ".svc.cluster.local in " + f.ns,
	}
	slices.Sort(want)
	failed := func() []string {
		var got []string
		for _, e := range f.entries(journal.ActuationFailed) {
			got = append(got, e.ActionID+" "+e.Error)
		}
		slices.Sort(got)
		return got
	}
	eventually(t, "each 403 journaled, naming the object and the verb", func() (bool, string) {
		got := failed()
		return slices.Equal(got, want), strings.Join(got, "\n")
	})
	eventually(t, "each 403 in the status", func() (bool, string) {
		st, err := f.store.Statuses(ctx(t), kube.Component)
		if err != nil || len(st) != 1 {
			return false, js(st)
		}
		got := slices.Sorted(slices.Values(st[0].Problems))
		var msgs []string
		for _, x := range want {
			_, msg, _ := strings.Cut(x, " ")
			msgs = append(msgs, msg)
		}
		slices.Sort(msgs)
		return slices.Equal(got, msgs), js(st)
	})
	r.a.Poke()
	time.Sleep(2 * time.Second) // a pass or two more: still nothing written, nothing journaled twice
	if got := w.versions(); got != rvs {
		t.Errorf("objects written without patch rights: resource versions %s, were %s", got, rvs)
	}
	if got := failed(); !slices.Equal(got, want) {
		t.Errorf("failures journaled again:\n%s", strings.Join(got, "\n"))
	}
	for _, l := range []*lever.Lever{pay, led} {
		if cur, _, _, err := f.store.Get(ctx(t), l.Kind, l.Target); err != nil || cur == nil || cur.ActionID != l.ActionID {
			t.Errorf("lever %s did not stay: %v %v", l.Target, cur, err)
		}
	}
	if seen, _, _ := f.store.Acks(ctx(t)); seen["retries:checkout->payments"] != 0 || seen["retries:checkout->ledger"] != 0 {
		t.Errorf("a lever that could not be applied counts in seen by: %v", seen)
	}
	if code, body := r.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with 403s on patch: %d %s", code, body)
	}

	reapply()
	eventually(t, "applied once patch is granted", func() (bool, string) { got := w.state(); return got == worldPayLedger, got })
	eventually(t, "problems cleared and both levers acknowledged", func() (bool, string) {
		st, err := f.store.Statuses(ctx(t), kube.Component)
		seen, _, aerr := f.store.Acks(ctx(t))
		return err == nil && aerr == nil && len(st) == 1 && len(st[0].Problems) == 0 &&
			seen["retries:checkout->payments"] == 1 && seen["retries:checkout->ledger"] == 1, js(st) + " " + js(seen)
	})
	f.release(lever.Retries, "checkout->payments")
	f.release(lever.Retries, "checkout->ledger")
	eventually(t, "restored exactly", w.restoredExactly)
	r.a.Poke()
	time.Sleep(2 * time.Second)
	assertOnce(t, f, map[string]int{"httproute/checkout-mesh": 1, "service/payments": 1, "backendtrafficpolicy/pay-policy": 1,
		"serviceprofile/ledger." + f.ns + ".svc.cluster.local": 1}, map[string]int{"httproute/checkout-mesh": 1, "service/payments": 1,
		"backendtrafficpolicy/pay-policy": 1, "serviceprofile/ledger." + f.ns + ".svc.cluster.local": 1})
}

// An actuator whose Role may not list ServiceProfiles and
// BackendTrafficPolicies (the printed Role without them) stays ready, and
// /readyz names each forbidden kind and the fix beside discovery; the other
// kinds work (a cap on an HTTPRoute applies), and a lever that needs a
// forbidden kind fails saying so, even where its objects are found by label. Once the printed Role is
// re-applied the kinds are watched, the detail goes and the lever applies.
func TestForbiddenListNamedInReadyz(t *testing.T) {
	f := newFixture(t)
	w := newKindsWorld(f)
	cfg, reapply := f.printedRBAC(map[string][]string{
		"linkerd.io/serviceprofiles":                   {"get", "list", "watch", "patch"},
		"gateway.envoyproxy.io/backendtrafficpolicies": {"get", "list", "watch", "patch"},
	})
	r := f.start(cfg, kindsMapping, "nolist")
	wantDetail := "ok discovery: forbidden: the actuator's Role may not list ServiceProfile (serviceprofiles linkerd.io/v1alpha2), " +
		"BackendTrafficPolicy (backendtrafficpolicies gateway.envoyproxy.io/v1alpha1) in " + f.ns +
		"; levers on them fail until it may: re-apply --print-rbac\n"
	eventually(t, "ready, naming the forbidden kinds", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusOK && contains(body, wantDetail), body
	})
	// Without ServiceProfiles the actuator cannot tell whether Linkerd
	// reads inventory's Service or its profile, so it changes neither.
	f.apply(lever.Retries, "checkout->inventory", "cap:2", 10*time.Minute)
	f.failedWith("forbidden: list backendtrafficpolicies in " + f.ns + ": the actuator's Role lacks it (re-apply --print-rbac)")
	f.failedWith("forbidden: list serviceprofiles in " + f.ns + ": the actuator's Role lacks it (re-apply --print-rbac)")
	eventually(t, "the route capped", func() (bool, string) {
		got := w.state()
		return strings.HasPrefix(got, "route 3,1* | payments http=5xx limit=3 | inventory http=5xx,429 limit=3 |"), got
	})
	f.apply(lever.Retries, "checkout->orders", lever.ValueOff, 10*time.Minute)

	reapply()
	eventually(t, "the kinds watched, the detail gone", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusOK && contains(body, "ok discovery\n") && !contains(body, "forbidden"), body
	})
	eventually(t, "every lever applied", func() (bool, string) { got := w.state(); return got == worldInvOrders, got })
	f.release(lever.Retries, "checkout->inventory")
	f.release(lever.Retries, "checkout->orders")
	eventually(t, "restored exactly", w.restoredExactly)
}
