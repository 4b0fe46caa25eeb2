package flags_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestServiceRoleIsEnough: a provider logged in with the `service` role of
// `stormctl acl print` reads levers and acknowledges them, and the server
// itself refuses it any write to a lever.
func TestServiceRoleIsEnough(t *testing.T) {
	keys := controlplane.NewKeys("")
	user := func(name string, role controlplane.Role) string {
		return strings.TrimPrefix(controlplane.ACLCommand(name, role, keys, ">"+name+"-pw"), "ACL SETUSER ")
	}
	srv, _, w := newRedis(t, testenv.RedisOptions{ACL: []string{
		"default on nopass ~* &* +@all", user("svc", controlplane.Service)}})
	svc := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "svc", Password: "svc-pw"})
	t.Cleanup(func() { _ = svc.Close() })
	p := flags.NewProvider(svc, flags.Heartbeat(100*time.Millisecond), flags.InstanceID("checkout-1"))
	if err := p.Init(openfeature.EvaluationContext{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Shutdown)

	w.set(t, lever.Retries, "checkout", lever.ValueOff, time.Hour, true)
	store, err := controlplane.NewStore(context.Background(), w.c, "")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the service user's acknowledgement", func() bool {
		seen, live, err := store.Acks(context.Background())
		return err == nil && live == 1 && seen[lever.Member(lever.Retries, "checkout")] == 1
	})
	err = svc.Set(context.Background(), keys.Lever(lever.Retries, "checkout"), "{}", 0).Err()
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("service user wrote a lever: %v", err)
	}
	if err := svc.XAdd(context.Background(), &redis.XAddArgs{Stream: keys.Journal(), Values: []string{"entry", "{}"}}).Err(); err == nil {
		t.Fatal("service user appended to the journal")
	}
}
