package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Every script of the package runs under the responder's ACL rules, since
// Redis checks each command a script makes against the caller's rights;
// the viewer can run none of them.
func TestResponderRulesCoverEveryScript(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default off",
		aclUser("r", "r-pw", Responder), aclUser("v", "v-pw", Viewer)}})
	for _, tc := range []struct {
		user, pw string
		allowed  bool
	}{{"r", "r-pw", true}, {"v", "v-pw", false}} {
		s := openStore(t, r, tc.user, tc.pw)
		short := lever.Lever{Kind: lever.Degraded, Target: "svc-" + tc.user, Value: "on", Actor: "a", Reason: "x", ExpiresAt: time.Now().Add(200 * time.Millisecond)}
		ops := map[string]func() error{
			"apply": func() error {
				_, err := s.Apply(ctx, ApplyRequest{Lever: short})
				return err
			},
			"append once": func() error {
				_, _, err := s.AppendOnce(ctx, journal.Entry{Event: journal.Note, Actor: "a"})
				return err
			},
			"rate": func() error {
				_, err := s.Rate(ctx, "a", RateLimit{Window: time.Minute, PerActor: 5, Overall: 10}, true)
				return err
			},
			"swap record": func() error {
				_, err := s.SwapRecord(ctx, "incidents", "I-"+tc.user, "", `{"id":"x"}`, journal.Entry{Event: journal.IncidentOpened, Actor: "a"})
				return err
			},
			"read records": func() error {
				_, err := s.Records(ctx, "incidents")
				return err
			},
		}
		for name, op := range ops {
			err := op()
			var pe *PermissionError
			switch {
			case name == "read records" && err != nil:
				t.Errorf("%s: %s: %v", tc.user, name, err)
			case name == "read records":
			case tc.allowed && err != nil:
				t.Errorf("responder: %s: %v", name, err)
			case !tc.allowed && !errors.As(err, &pe):
				t.Errorf("viewer: %s: want NOPERM, got %v", name, err)
			}
		}
		if !tc.allowed {
			continue
		}
		cur, _, _, _ := s.Get(ctx, lever.Degraded, short.Target)
		if _, err := s.Extend(ctx, ExtendRequest{Current: cur, ExpiresAt: time.Now().Add(300 * time.Millisecond)}); err != nil {
			t.Errorf("responder: extend: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
		if es, err := s.Reap(ctx, time.Now()); err != nil || len(es) != 1 {
			t.Errorf("responder: reap: %v %v", es, err)
		}
		if res, err := s.Apply(ctx, ApplyRequest{Lever: lever.Lever{Kind: lever.Shed, Target: "x", Value: "5", Actor: "a", Reason: "x", ExpiresAt: time.Now().Add(time.Minute)}}); err != nil {
			t.Errorf("responder: apply: %v", err)
		} else if _, err := s.Release(ctx, ReleaseRequest{Current: res.Lever}); err != nil {
			t.Errorf("responder: release: %v", err)
		}
	}
}
