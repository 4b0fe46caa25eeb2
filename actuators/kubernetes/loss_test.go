package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// A running actuator remembers the furthest journal position it saw. When
// its redis-server is killed (SIGKILL) and comes back from an older RDB
// snapshot, the journal has gone back: /readyz says so in its detail and
// /metrics sets the gauge flagd serve exports, within seconds, and one
// controlplane.lost entry names the range.
func TestActuatorReportsJournalLoss(t *testing.T) {
	f := newFixture(t)
	f.hpa("checkout", nil, checkoutLabels)
	r := f.start(nil, kube.Mapping{}, "a1")
	<-r.a.Ready()
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "the freeze is actuated", func() (bool, string) {
		return frozen(f.getHPA("checkout")), js(f.getHPA("checkout").Spec.Behavior)
	})
	// The snapshot the server will come back from.
	if err := f.store.Client().Save(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"cart", "search", "ledger"} {
		f.apply(lever.Retries, target, lever.ValueOff, 10*time.Minute)
	}
	code, body := r.get("/readyz")
	_, metrics := r.get("/metrics")
	if code != 200 || !strings.Contains(body, "ok journal\n") || !strings.Contains(metrics, "stormctl_controlplane_journal_lost 0") {
		t.Fatalf("before the loss: %d %s", code, body)
	}
	// Two checks at least, so the actuator has seen the three applies.
	time.Sleep(2*controlplane.LossCheckEvery + time.Second)

	f.redis.Restart()
	restarted := time.Now()
	eventually(t, "/readyz reports the loss", func() (bool, string) {
		_, body := r.get("/readyz")
		return strings.Contains(body, "ok journal: LOST: journal went back: ") && strings.Contains(body, " entries after stream id "), body
	})
	t.Logf("loss in /readyz %v after the restart", time.Since(restarted).Round(time.Millisecond))
	if took := time.Since(restarted); took > 15*time.Second {
		t.Errorf("the loss took %v to show", took)
	}
	if _, m := r.get("/metrics"); !strings.Contains(m, "stormctl_controlplane_journal_lost 1") {
		t.Fatalf("metrics lack the loss:\n%s", m)
	}
	if lost := f.entries(journal.ControlPlaneLost); len(lost) != 1 || lost[0].Actor != controlplane.LossActor || !strings.Contains(lost[0].Outcome, "entries after stream id") {
		t.Fatalf("controlplane.lost entries: %s", js(lost))
	}
}
