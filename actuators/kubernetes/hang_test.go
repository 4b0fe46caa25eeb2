package kubernetes_test

import (
	"net/http"
	"testing"
	"time"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/internal/testenv/kubeenv"
	"github.com/stormctl/stormctl/lever"
)

// The actuator outlives an API server that hangs rather than dies. A killed
// server refuses connections at once; a stopped one (SIGSTOP: a wedged
// process, a node partitioned away) accepts them and never answers, so
// every request, the lease renewal's and the watches' included, waits on
// its own timeout. On a control plane of the test's own, with checkout
// frozen, the server hangs for 30 s; meanwhile the freeze is released and
// ledger is frozen. The actuator keeps running, /readyz fails naming the
// API server the whole time, and after SIGCONT it converges exactly:
// checkout as it was, ledger frozen, each journaled once.
func TestAPIServerHang(t *testing.T) {
	env := kubeenv.StartOwned(t)
	f := newFixtureOn(t, env)
	f.hpa("checkout", nil, checkoutLabels)
	f.hpa("ledger", nil, ledgerLabels)
	r := f.start(nil, kube.Mapping{}, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen", func() (bool, string) { h := f.getHPA("checkout"); return frozen(h), js(h.Spec.Behavior) })
	eventually(t, "ready", func() (bool, string) { code, body := r.get("/readyz"); return code == http.StatusOK, body })

	resume := env.HangAPIServer(t)
	hung := time.Now()
	eventually(t, "/readyz fails naming the API server", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusServiceUnavailable && contains(body, "failed apiserver: API server not answering"), body
	})
	f.release(lever.Autoscaling, "checkout")
	f.apply(lever.Autoscaling, "ledger", lever.ValueFrozen, 10*time.Minute)
	for time.Since(hung) < 30*time.Second {
		select {
		case err := <-r.done:
			t.Fatalf("the actuator exited while the API server hung: %v", err)
		case <-time.After(time.Second):
		}
		// /readyz itself must not hang on the hung server: its checks
		// read state, they do not ask the API server.
		start := time.Now()
		code, body := r.get("/readyz")
		if code != http.StatusServiceUnavailable || !contains(body, "failed apiserver:") {
			t.Fatalf("/readyz while the API server hung: %d %s", code, body)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("/readyz took %v while the API server hung", took)
		}
	}
	resume()

	eventually(t, "converged after the hang", func() (bool, string) {
		c, l := f.getHPA("checkout"), f.getHPA("ledger")
		return c.Spec.Behavior == nil && c.Annotations[kube.SavedAnnotation] == "" && frozen(l), js(c.Spec.Behavior) + " " + js(l.Spec.Behavior)
	})
	eventually(t, "ready again", func() (bool, string) {
		code, body := r.get("/readyz")
		return code == http.StatusOK && contains(body, "ok apiserver") && contains(body, "ok informers"), body
	})
	// A lever in force still reaches objects created after the hang.
	f.hpa("ledger-canary", nil, ledgerLabels)
	eventually(t, "new HPA frozen", func() (bool, string) { h := f.getHPA("ledger-canary"); return frozen(h), js(h.Spec.Behavior) })
	r.a.Poke()
	time.Sleep(2 * time.Second)
	assertOnce(t, f, map[string]int{"hpa/checkout": 1, "hpa/ledger": 1, "hpa/ledger-canary": 1}, map[string]int{"hpa/checkout": 1})
	select {
	case err := <-r.done:
		t.Fatalf("the actuator exited after the hang: %v", err)
	default:
	}
}
