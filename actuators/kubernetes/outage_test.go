package kubernetes_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// The actuator outlives its API server. On a control plane of the test's own
// (the API server is killed and started again on the same port and etcd):
//
//   - running: a freeze holds when the API server goes away for 30 s; during
//     the outage that freeze is released and another service is frozen. The
//     actuator loses its lease, keeps running, says so on /readyz, and when
//     the server is back it leads again and converges exactly: the first HPA
//     as it was, the second frozen, each journaled once.
//   - started while the API server is down: /readyz fails naming the API
//     server and discovery; once the server is back it watches every kind,
//     restores the freeze released meanwhile and applies the new one.
//   - a kind not served at start (KEDA's CRD not installed) is watched once
//     it is: a freeze whose ScaledObject could not be found is applied to it
//     without a restart.
func TestAPIServerOutage(t *testing.T) {
	env := kubeenv.StartOwned(t, "testdata/crds/networking.istio.io_virtualservices.yaml")

	t.Run("kind served later", func(t *testing.T) {
		f := newFixtureOn(t, env)
		f.hpa("checkout", nil, checkoutLabels)
		m := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {ScaledObject: []string{"checkout-worker"}}}}
		r := f.start(nil, m, "a1")
		f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
		eventually(t, "failure journaled", func() (bool, string) {
			e := f.entries(journal.ActuationFailed)
			return len(e) == 1 && contains(e[0].Error, "the cluster serves no ScaledObject"), js(e)
		})
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{"testdata/crds/keda.sh_scaledobjects.yaml"}}); err != nil {
			t.Fatal(err)
		}
		so := f.object(scaledObject)
		eventually(t, "paused", func() (bool, string) {
			a := f.get(so).GetAnnotations()
			return a["autoscaling.keda.sh/paused"] == "true", js(a)
		})
		eventually(t, "ready", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })
	})

	t.Run("running", func(t *testing.T) {
		f := newFixtureOn(t, env)
		f.hpa("checkout", nil, checkoutLabels)
		f.hpa("ledger", nil, ledgerLabels)
		r := f.start(nil, kube.Mapping{}, "a1")
		f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
		eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })
		eventually(t, "ready", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })

		restart := env.StopAPIServer(t)
		down := time.Now()
		eventually(t, "/readyz fails naming the API server", func() (bool, string) {
			code, body := r.get("/readyz")
			return code == http.StatusServiceUnavailable && contains(body, "failed apiserver: API server not answering"), body
		})
		f.release(lever.Autoscaling, "checkout")
		f.apply(lever.Autoscaling, "ledger", lever.ValueFrozen, 10*time.Minute)
		eventually(t, "lease lost", func() (bool, string) {
			_, body := r.get("/metrics")
			return contains(body, "stormctl_actuator_leader 0") && contains(body, "stormctl_actuator_lease_lost_total 1"), body
		})
		r.outage(t, down, 30*time.Second)
		restart()

		eventually(t, "converged after the outage", func() (bool, string) {
			c, l := f.getHPA("checkout"), f.getHPA("ledger")
			return c.Spec.Behavior == nil && c.Annotations[kube.SavedAnnotation] == "" && frozen(l), js(c.Spec.Behavior) + " " + js(l.Spec.Behavior)
		})
		eventually(t, "ready again", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })
		r.a.Poke()
		time.Sleep(2 * time.Second)
		assertOnce(t, f, map[string]int{"hpa/checkout": 1, "hpa/ledger": 1}, map[string]int{"hpa/checkout": 1})
	})

	t.Run("started while down", func(t *testing.T) {
		f := newFixtureOn(t, env)
		f.hpa("checkout", nil, checkoutLabels)
		f.hpa("ledger", nil, ledgerLabels)
		first := f.start(nil, kube.Mapping{}, "a1")
		f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
		eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })
		first.stop()

		restart := env.StopAPIServer(t)
		r := f.start(nil, kube.Mapping{}, "a2")
		f.release(lever.Autoscaling, "checkout")
		f.apply(lever.Autoscaling, "ledger", lever.ValueFrozen, 10*time.Minute)
		eventually(t, "/readyz fails naming the API server and discovery", func() (bool, string) {
			code, body := r.get("/readyz")
			return code == http.StatusServiceUnavailable && contains(body, "failed apiserver:") &&
				contains(body, "failed discovery: cannot tell whether the cluster serves HorizontalPodAutoscaler"), body
		})
		time.Sleep(5 * time.Second) // discovery backs off meanwhile
		if code, body := r.get("/readyz"); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while down: %d %s", code, body)
		}
		restart()

		eventually(t, "converged after the server came back", func() (bool, string) {
			c, l := f.getHPA("checkout"), f.getHPA("ledger")
			return c.Spec.Behavior == nil && c.Annotations[kube.SavedAnnotation] == "" && frozen(l), js(c.Spec.Behavior) + " " + js(l.Spec.Behavior)
		})
		eventually(t, "ready", func() (bool, string) {
			code, body := r.get("/readyz")
			return code == http.StatusOK && contains(body, "ok discovery") && contains(body, "ok informers"), body
		})
		// Watches run: an HPA created now is frozen by the event, well
		// before the next resync would find it.
		f.hpa("ledger-canary", nil, ledgerLabels)
		eventually(t, "new HPA frozen", func() (bool, string) { h := f.getHPA("ledger-canary"); return frozen(h), js(h.Spec.Behavior) })
		r.a.Poke()
		time.Sleep(2 * time.Second)
		assertOnce(t, f, map[string]int{"hpa/checkout": 1, "hpa/ledger": 1, "hpa/ledger-canary": 1}, map[string]int{"hpa/checkout": 1})
	})
}

var ledgerLabels = map[string]string{"app.kubernetes.io/name": "ledger"}

// scaledObject is checkout's KEDA ScaledObject.
const scaledObject = `{"apiVersion":"keda.sh/v1alpha1","kind":"ScaledObject","metadata":{"name":"checkout-worker"},
	"spec":{"scaleTargetRef":{"name":"checkout-worker"},"minReplicaCount":2,"maxReplicaCount":40,
	 "triggers":[{"type":"prometheus","metadata":{"serverAddress":"http://prometheus.monitoring:9090",
	  "query":"sum(rate(stormctl_requests_total{service=\"checkout\"}[1m]))","threshold":"100"}}]}}`

// assertOnce checks the journal holds exactly the applied and restored
// entries given, by object: nothing was done twice or left undone.
func assertOnce(t *testing.T, f *fixture, applied, restored map[string]int) {
	t.Helper()
	count := func(ev journal.Event) map[string]int {
		n := map[string]int{}
		for _, e := range f.entries(ev) {
			obj, _, _ := strings.Cut(e.Object, " in ")
			n[obj]++
		}
		return n
	}
	if got := count(journal.ActuationApplied); js(got) != js(applied) {
		t.Errorf("applied by object %v, want %v", got, applied)
	}
	if got := count(journal.ActuationRestored); js(got) != js(restored) {
		t.Errorf("restored by object %v, want %v", got, restored)
	}
}
