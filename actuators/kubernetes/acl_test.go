package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	kube "github.com/stormctl/stormctl/actuators/kubernetes"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// The actuator runs under the Redis role `stormctl acl print --role
// actuator` prints, enforced by the real redis-server: it follows the
// levers, journals, acknowledges and reports, and cannot write a lever.
func TestActuatorUnderItsRedisRole(t *testing.T) {
	f := newFixture(t, func(ns string) []string {
		return []string{"default on nopass ~* &* +@all",
			strings.TrimPrefix(controlplane.ACLCommand("actuator", controlplane.Actuator, controlplane.NewKeys(ns), ">a-secret"), "ACL SETUSER ")}
	})
	rc := redis.NewClient(&redis.Options{Addr: f.redis.Addr, Username: "actuator", Password: "a-secret"})
	act, err := controlplane.NewStore(ctx(t), rc, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = act.Close() })
	f.actStore = act
	f.hpa("checkout", nil, checkoutLabels)
	f.start(nil, kube.Mapping{}, "a1")
	f.apply(lever.Autoscaling, "checkout", lever.ValueFrozen, 10*time.Minute)
	eventually(t, "frozen, journaled and acknowledged", func() (bool, string) {
		seen, _, err := f.store.Acks(ctx(t))
		e := f.entries(journal.ActuationApplied)
		return err == nil && frozen(f.getHPA("checkout")) && len(e) == 1 && e[0].RedisUser == "actuator" && seen["autoscaling:checkout"] == 1, js(e)
	})
	if st, err := f.store.Statuses(ctx(t), kube.Component); err != nil || len(st) != 1 {
		t.Errorf("status report: %v %v", st, err)
	}
	cur, ver, head, err := act.Get(context.Background(), lever.Autoscaling, "checkout")
	if err != nil {
		t.Fatal(err)
	}
	_, err = act.Release(ctx(t), controlplane.ReleaseRequest{Current: cur, Head: head, Entry: journal.Entry{Actor: "actuator"}})
	if err == nil || !strings.Contains(err.Error(), "actuator") {
		t.Errorf("the actuator's Redis user released a lever (version %d): %v", ver, err)
	}
}
