package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
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

// A per-person user (ACLRulesFor with an actor) writes as its actor and as
// nobody else: every journaling script declares its entry's actor key, so
// claiming bob fails inside Redis, as an *IdentityError journaled under the
// authenticated user, with nothing else written. A shared user may write
// as anyone, and says so.
func TestPerPersonRulesBindTheActor(t *testing.T) {
	ctx := context.Background()
	bound := func(user string, role Role) string {
		return strings.TrimPrefix(strings.Join(ACLArgs(user, role, NewKeys("t"), user, ">"+user+"-pw"), " "), "ACL SETUSER ")
	}
	r := testenv.StartRedis(t, testenv.RedisOptions{ACL: []string{"default on nopass ~* &* +@all",
		bound("alice", Responder), bound("a*b", Commander), aclUser("shared", "shared-pw", Responder)}})
	alice := openStore(t, r, "alice", "alice-pw")
	if id, err := alice.Identity(ctx); err != nil || id.Shared || id.User != "alice" || id.Advisory() != "" {
		t.Fatalf("alice's identity: %+v %v", id, err)
	}
	for _, user := range []string{"shared", "default"} {
		pw := user + "-pw"
		if user == "default" {
			pw = ""
		}
		if id, err := openStore(t, r, user, pw).Identity(ctx); err != nil || !id.Shared || !strings.Contains(id.Advisory(), "roles and approvals are advisory") {
			t.Fatalf("%s's identity: %+v %v", user, id, err)
		}
	}
	asBob := lever.Lever{Kind: lever.Shed, Target: "checkout", Value: "10", Actor: "bob", Reason: "x", ExpiresAt: time.Now().Add(time.Minute)}
	writes := map[string]func() error{
		"apply": func() error {
			_, err := alice.Apply(ctx, ApplyRequest{Lever: asBob, Entry: journal.Entry{Actor: "bob"},
				Rate: &RateCharge{Actor: "bob", Limit: RateLimit{Window: time.Minute, PerActor: 5, Overall: 10}}})
			return err
		},
		"note": func() error {
			_, err := alice.Append(ctx, journal.Entry{Event: journal.Note, Actor: "bob", Reason: "hi"})
			return err
		},
		"record": func() error {
			_, err := alice.SwapRecord(ctx, "requests", "R1", "", `{}`, journal.Entry{Event: journal.ActionRequested, Actor: "bob"})
			return err
		},
	}
	for name, write := range writes {
		err := write()
		var ie *IdentityError
		if !errors.As(err, &ie) || exit.Code(err) != exit.Refused || ie.Entry.Actor != "alice" || ie.Entry.RedisUser != "alice" ||
			!strings.Contains(err.Error(), "acting as bob needs bob's Redis credentials; you are alice") {
			t.Fatalf("%s as bob: %v", name, err)
		}
	}
	if ls, _ := alice.Levers(ctx); len(ls) != 0 {
		t.Fatalf("levers written as bob: %v", ls)
	}
	if rec, _ := alice.Record(ctx, "requests", "R1"); rec != "" {
		t.Fatalf("record written as bob: %s", rec)
	}
	var pe *PermissionError
	if _, err := alice.Rate(ctx, "bob", RateLimit{Window: time.Minute, PerActor: 5, Overall: 10}, true); !errors.As(err, &pe) {
		t.Fatalf("bob's rate budget spent by alice: %v", err)
	}
	// As herself everything works; a name with glob characters matches
	// only itself.
	asAlice := asBob
	asAlice.Actor = "alice"
	if _, err := alice.Apply(ctx, ApplyRequest{Lever: asAlice, Entry: journal.Entry{Actor: "alice"},
		Rate: &RateCharge{Actor: "alice", Limit: RateLimit{Window: time.Minute, PerActor: 5, Overall: 10}}}); err != nil {
		t.Fatal(err)
	}
	glob := openStore(t, r, "a*b", "a*b-pw")
	if _, err := glob.Append(ctx, journal.Entry{Event: journal.Note, Actor: "a*b"}); err != nil {
		t.Fatalf("a*b as itself: %v", err)
	}
	var ie *IdentityError
	if _, err := glob.Append(ctx, journal.Entry{Event: journal.Note, Actor: "axb"}); !errors.As(err, &ie) {
		t.Fatalf("a*b as axb: %v", err)
	}
}
