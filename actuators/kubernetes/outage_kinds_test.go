package kubernetes_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/lever"
)

// The API server outage of TestAPIServerOutage, on every retry kind beyond
// Istio's at once (kindsWorld, on a control plane of the test's own).
// Before the outage payments is capped (its HTTPRoute rule, Service
// annotations and BackendTrafficPolicy) and ledger's ServiceProfile is off
// with a short TTL. While the API server is down the payments cap is
// released, the ledger off expires, inventory is capped and orders turned
// off. The actuator loses its lease and keeps running; once the server is
// back each object ends as the levers say — payments' and ledger's exactly
// as created, inventory's and orders' changed — each change journaled
// once; the later releases restore those exactly too.
func TestAPIServerOutageEveryRetryKind(t *testing.T) {
	env := kubeenv.StartOwned(t, "testdata/crds")
	f := newFixtureOn(t, env)
	w := newKindsWorld(f)
	if got := w.state(); got != worldAsCreated {
		t.Fatalf("precondition: %s", got)
	}
	r := f.start(nil, kindsMapping, "a1")
	r.ready(t)
	f.apply(lever.Retries, "checkout->payments", "cap:2", 10*time.Minute)
	led := f.apply(lever.Retries, "checkout->ledger", lever.ValueOff, 35*time.Second)
	eventually(t, "applied", func() (bool, string) { got := w.state(); return got == worldPayLedger, got })
	eventually(t, "ready", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })

	restart := env.StopAPIServer(t)
	down := time.Now()
	if left := time.Until(led.ExpiresAt); left < 5*time.Second {
		t.Fatalf("precondition: the ledger lever expires %v after the API server stopped; the pass before took too long", left)
	}
	eventually(t, "/readyz fails naming the API server", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusServiceUnavailable && contains(body, "failed apiserver: API server not answering"), body
	})
	f.release(lever.Retries, "checkout->payments")
	f.apply(lever.Retries, "checkout->inventory", "cap:2", 10*time.Minute)
	f.apply(lever.Retries, "checkout->orders", lever.ValueOff, 10*time.Minute)
	eventually(t, "lease lost", func() (bool, string) {
		_, body := r.get("/metrics")
		return contains(body, "stormctl_actuator_leader 0") && contains(body, "stormctl_actuator_lease_lost_total 1"), body
	})
	eventually(t, "the ledger lever expired", func() (bool, string) {
		l, _, _, err := f.store.Get(ctx(t), lever.Retries, "checkout->ledger")
		return err == nil && l == nil, js(l)
	})
	r.outage(t, down, 20*time.Second)
	restart()

	eventually(t, "converged after the outage", func() (bool, string) { got := w.state(); return got == worldInvOrders, got })
	// Each informer comes back after its own backoff (up to a minute after
	// a long outage, and client-go's watch-list backoff does not end when
	// the actuator stops), so the test waits for every watch before going on.
	if ok, last := kubeenv.Poll(90*time.Second, func() (bool, string) { return watched(t, env) }); !ok {
		t.Fatalf("not every kind watched again 90s after the outage; unwatched: %s", last)
	}
	eventually(t, "ready again", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })
	sp := func(name string) string { return "serviceprofile/" + name + "." + f.ns + ".svc.cluster.local" }
	applied := map[string]int{"httproute/checkout-mesh": 2, "service/payments": 1, "service/inventory": 1,
		"backendtrafficpolicy/pay-policy": 1, "backendtrafficpolicy/inv-policy": 1, sp("ledger"): 1, sp("orders"): 1}
	restored := map[string]int{"httproute/checkout-mesh": 1, "service/payments": 1, "backendtrafficpolicy/pay-policy": 1, sp("ledger"): 1}
	r.a.Poke()
	time.Sleep(2 * time.Second)
	assertOnce(t, f, applied, restored)

	f.release(lever.Retries, "checkout->inventory")
	f.release(lever.Retries, "checkout->orders")
	eventually(t, "restored exactly", w.restoredExactly)
	r.a.Poke()
	time.Sleep(2 * time.Second)
	restored["httproute/checkout-mesh"]++
	restored["service/inventory"], restored["backendtrafficpolicy/inv-policy"], restored[sp("orders")] = 1, 1, 1
	assertOnce(t, f, applied, restored)
}

// watched says whether the API server has a namespaced watch open on every
// kind the actuator watches (apiserver_longrunning_requests, verb WATCH),
// naming those it has not.
func watched(t *testing.T, env *kubeenv.Env) (bool, string) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx(t))
	if err != nil {
		return false, err.Error()
	}
	var missing []string
	for _, gvk := range kube.Kinds {
		want := []string{`group="` + gvk.Group + `"`, `resource="` + kube.Resource(gvk) + `"`, `scope="namespace"`, `verb="WATCH"`}
		found := false
		for _, line := range strings.Split(string(raw), "\n") {
			labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_longrunning_requests{"), "} ")
			if ok && line != labels && value != "0" && containsAll(labels, want) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, gvk.Kind+"."+gvk.Group)
		}
	}
	return len(missing) == 0, strings.Join(missing, ", ")
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// outage checks, every second until the outage has lasted d, that the
// replica keeps running and /readyz fails.
func (r *running) outage(t *testing.T, down time.Time, d time.Duration) {
	t.Helper()
	for time.Since(down) < d {
		select {
		case err := <-r.done:
			t.Fatalf("the actuator exited during the outage: %v", err)
		case <-time.After(time.Second):
		}
		if code, body := r.get("/readyz"); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz during the outage: %d %s", code, body)
		}
	}
}
