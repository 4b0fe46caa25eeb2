package kubernetes_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// An actuator stopped part-way through a freeze (here: it had reached one
// HPA of three) leaves a restarted one to converge: it freezes the two it
// had not reached, does not write the first again, and on release restores
// each HPA exactly once.
func TestRestartConvergesAfterPartialFreeze(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"checkout-a", "checkout-b", "checkout-c"} {
		f.hpa(n, nil, checkoutLabels)
	}
	partial := kube.Mapping{Services: map[string]kube.ServiceObjects{"checkout": {HPA: []string{"checkout-a"}}}}
	first := f.start(nil, partial, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "first HPA frozen", func() (bool, string) { h := f.getHPA("checkout-a"); return frozen(h), js(h.Spec.Behavior) })
	first.stop()
	if frozen(f.getHPA("checkout-b")) {
		t.Fatal("precondition: checkout-b frozen by the first run")
	}

	second := f.start(nil, kube.Mapping{}, "a2")
	eventually(t, "all frozen after restart", func() (bool, string) {
		a, b, c := f.getHPA("checkout-a"), f.getHPA("checkout-b"), f.getHPA("checkout-c")
		return frozen(a) && frozen(b) && frozen(c), js(b.Spec.Behavior)
	})
	second.a.Poke()
	time.Sleep(time.Second)
	if w := testutil.ToFloat64(second.a.Writes()); w != 2 {
		t.Errorf("the restarted actuator wrote %v times, want 2 (the HPAs it had not reached)", w)
	}
	f.release(lever.Autoscaling, "checkout")
	eventually(t, "all restored", func() (bool, string) {
		n := 0
		for _, name := range []string{"checkout-a", "checkout-b", "checkout-c"} {
			if f.getHPA(name).Spec.Behavior == nil {
				n++
			}
		}
		return n == 3 && len(f.entries(journal.ActuationRestored)) == 3, js(f.entries(journal.ActuationRestored))
	})
	second.a.Poke()
	time.Sleep(time.Second)
	objects := map[string]int{}
	for _, e := range f.entries(journal.ActuationRestored) {
		objects[e.Object]++
	}
	if len(objects) != 3 {
		t.Errorf("restores by object: %v, want each of three once", objects)
	}
}

// The leader serves /healthz, /readyz once its first pass completed, and
// /metrics with its own series.
func TestEndpoints(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	r := f.start(nil, kube.Mapping{}, "a1")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + r.addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	<-r.a.Ready()
	eventually(t, "/readyz", func() (bool, string) { code, body := get("/readyz"); return code == http.StatusOK, body })
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "/metrics counts the write", func() (bool, string) {
		_, body := get("/metrics")
		return strings.Contains(body, "stormctl_actuator_leader 1") &&
			strings.Contains(body, `stormctl_actuator_writes_total{object="hpa"} 1`) &&
			strings.Contains(body, `stormctl_actuator_actuations_total{event="applied"} 1`), body
	})
}
