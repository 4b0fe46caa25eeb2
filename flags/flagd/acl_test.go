package flagd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	gofd "github.com/open-feature/go-sdk-contrib/providers/flagd/pkg"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags/flagd"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lever"
)

// TestFlagdRoleIsEnough: a server logged in with the flagd role of
// `stormctl acl print` serves the levers and acknowledges, and the Redis
// server itself refuses that user any lever write, journal append or script.
func TestFlagdRoleIsEnough(t *testing.T) {
	keys := controlplane.NewKeys("")
	acl := strings.TrimPrefix(controlplane.ACLCommand("fd", controlplane.Flagd, keys, ">fd-pw"), "ACL SETUSER ")
	rs := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default on nopass ~* &* +@all", acl}})
	fd := redis.NewClient(&redis.Options{Addr: rs.Addr, Username: "fd", Password: "fd-pw"})
	t.Cleanup(func() { _ = fd.Close() })
	e := startEnvOn(t, rs, flagd.Options{Redis: fd, InstanceID: "flagd-1"})
	c := goClient(t, gofd.WithInProcessResolver(), gofd.WithPort(port(t, e.srv.Addr("sync"))))
	e.w.set(t, lever.Retries, "checkout", "off", time.Hour)
	eventually(t, 5*time.Second, "the lever through a flagd-role server", func() bool {
		return !c.Boolean(context.Background(), lever.RetriesEnabled, true, ctxOf("checkout", ""))
	})
	eventually(t, 5*time.Second, "the server's acknowledgement", func() bool {
		v, err := e.w.c.HGet(context.Background(), keys.Ack("flagd-1"), lever.Member(lever.Retries, "checkout")).Int64()
		return err == nil && v == 1
	})
	ctx := context.Background()
	for what, err := range map[string]error{
		"SET a lever":      fd.Set(ctx, keys.Lever(lever.Retries, "checkout"), "{}", 0).Err(),
		"PUBLISH a change": fd.Publish(ctx, keys.Changes(), "{}").Err(),
		"XADD the journal": fd.XAdd(ctx, &redis.XAddArgs{Stream: keys.Journal(), Values: []string{"entry", "{}"}}).Err(),
		"EVAL a script":    fd.Eval(ctx, "return 1", nil).Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("the flagd user could %s: %v", what, err)
		}
	}
}
