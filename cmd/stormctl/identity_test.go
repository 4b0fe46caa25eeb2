package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// perPersonEnv is an action environment whose Redis has one user per
// person, each loaded from `acl print --role R --actor A` as printed.
type perPersonEnv struct {
	*actionEnv
	base *url.URL
}

func newPerPersonEnv(t *testing.T, users map[string]string) *perPersonEnv {
	t.Helper()
	e := newActionEnv(t)
	base, err := url.Parse(e.env["STORMCTL_REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: base.Host})
	t.Cleanup(func() { admin.Close() })
	for actor, role := range users {
		e.env["PW"] = actor + "-pw"
		out, errOut, code := e.run("alice", "acl", "print", "--role", role, "--actor", actor, "--password-env", "PW", "-o", "json")
		var printed []aclUser
		if code != 0 || json.Unmarshal([]byte(out), &printed) != nil || len(printed) != 1 {
			t.Fatalf("acl print --role %s --actor %s: exit %d\n%s%s", role, actor, code, out, errOut)
		}
		args := make([]any, len(printed[0].Args))
		for i, a := range printed[0].Args {
			args[i] = a
		}
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("the server rejected %s: %v", printed[0].Command, err)
		}
	}
	return &perPersonEnv{actionEnv: e, base: base}
}

// as runs stormctl logged in to Redis as user, claiming actor.
func (p *perPersonEnv) as(user string, code int, actor string, args ...string) (map[string]any, string) {
	p.t.Helper()
	u := *p.base
	u.User = url.UserPassword(user, user+"-pw")
	p.env["STORMCTL_REDIS_URL"] = u.String()
	return p.expect(code, actor, args...)
}

func (p *perPersonEnv) lastEntry() journal.Entry {
	p.t.Helper()
	p.env["STORMCTL_REDIS_URL"] = p.base.String() // the default user reads everything
	es := p.journalEntries()
	return es[len(es)-1]
}

// Per-person Redis users bind the actor: alice cannot apply, request or
// approve as bob (exit 3, NOPERM underneath, journaled as alice), cannot
// approve her own request under any --actor, and bob can.
func TestPerPersonUsersBindTheActor(t *testing.T) {
	p := newPerPersonEnv(t, map[string]string{"alice": "responder", "bob": "commander", "automation": "automation"})
	const claim = "acting as bob needs bob's Redis credentials; you are alice"

	_, msg := p.as("alice", exit.Refused, "bob", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...)
	if !strings.Contains(msg, claim) {
		t.Fatalf("apply as bob: %s", msg)
	}
	if en := p.lastEntry(); en.Actor != "alice" || en.RedisUser != "alice" || en.Outcome != "refused: identity" ||
		!strings.Contains(en.Error, "claimed actor bob") || en.Kind != "retries" {
		t.Fatalf("apply as bob journaled as %+v", en)
	}
	_, msg = p.as("alice", exit.Refused, "bob", "action", "request", "autoscaling", "checkout", "frozen", "--ttl", "10m", "--reason", "freeze", "--force")
	if !strings.Contains(msg, claim) {
		t.Fatalf("request as bob: %s", msg)
	}

	req, _ := p.as("alice", exit.Pending, "alice", "action", "apply", "autoscaling", "checkout", "frozen", "--ttl", "10m", "--reason", "freeze", "--force", "--yes", "-o", "json")
	id, _ := req["request_id"].(string)
	if id == "" {
		t.Fatalf("no request id: %v", req)
	}
	for actor, want := range map[string]string{
		"alice": "alice may not approve their own request", "bob": claim,
		"carol": "acting as carol needs carol's Redis credentials; you are alice",
	} {
		if _, msg := p.as("alice", exit.Refused, actor, "action", "approve", id, "--yes"); !strings.Contains(msg, want) {
			t.Errorf("alice approving her request as %s: %s", actor, msg)
		}
	}
	// The automation identity never approves, and nobody else acts as it.
	if _, msg := p.as("automation", exit.Refused, "automation", "action", "approve", id, "--yes"); !strings.Contains(msg, "automation (role automation) may not approve") {
		t.Errorf("automation approving: %s", msg)
	}
	if _, msg := p.as("alice", exit.Refused, "automation", "action", "apply", "degraded", "checkout", "on", "--ttl", "5m", "--reason", "x", "--force", "--yes"); !strings.Contains(msg, "acting as automation needs automation's Redis credentials") {
		t.Errorf("alice as automation: %s", msg)
	}
	res, _ := p.as("bob", exit.OK, "bob", "action", "approve", id, "--yes", "-o", "json")
	if res["approved_by"] != "bob" || res["advisory"] != nil {
		t.Fatalf("bob's approval: %v", res)
	}
	var approved *journal.Entry
	for _, en := range p.journalEntries() {
		if en.Event == journal.ActionApproved {
			approved = &en
		}
	}
	if approved == nil || approved.Actor != "bob" || approved.RedisUser != "bob" || !strings.Contains(approved.Outcome, "(Redis users alice → bob)") {
		t.Fatalf("approval entry: %+v", approved)
	}
}

// The users `acl print` makes are sufficient: every command path of each
// role works under its own user, with nothing refused by the server.
func TestACLPrintUsersCoverEveryCommandPath(t *testing.T) {
	p := newPerPersonEnv(t, map[string]string{"alice": "responder", "bob": "commander", "automation": "automation"})
	p.env["SUDO_USER"] = "carol" // who started the unattended run
	for _, who := range []string{"alice", "bob", "automation"} {
		inc, _ := p.as(who, exit.OK, who, "incident", "open", "storm seen by "+who, "-o", "json")
		p.as(who, exit.OK, who, "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m", "--reason", "look")
		res, _ := p.as(who, exit.OK, who, append([]string{"retries", "off", "checkout->payments", "-o", "json"}, applyArgs...)...)
		aid := res["action_id"].(string)
		p.as(who, exit.OK, who, "action", "extend", aid, "--ttl", "20m", "--reason", "still storming", "--yes")
		p.as(who, exit.OK, who, "action", "release", aid, "--reason", "recovered", "--yes")
		p.as(who, exit.Pending, who, "action", "apply", "autoscaling", "checkout", "frozen", "--ttl", "10m", "--reason", "freeze", "--force", "--yes")
		// A refusal is journaled under the user's own actor.
		p.as(who, exit.Refused, who, "retries", "off", "checkout->paymnts", "--ttl", "10m", "--reason", "typo", "--yes")
		p.as(who, exit.OK, who, "incident", "close", inc["id"].(string))
		p.as(who, exit.OK, who, "status")
		p.as(who, exit.OK, who, "action", "list", "--all")
		p.as(who, exit.OK, who, "journal", "verify")
	}
	// Each request is approved by someone else, under their own user; the
	// automation's too, by a person.
	reqs := map[string]string{}
	for _, a := range p.actionList() {
		if a["state"] == "pending approval" {
			reqs[a["actor"].(string)] = a["request_id"].(string)
		}
	}
	if len(reqs) != 3 {
		t.Fatalf("pending requests: %v", reqs)
	}
	for requester, approver := range map[string]string{"alice": "bob", "automation": "alice", "bob": "alice"} {
		res, _ := p.as(approver, exit.OK, approver, "action", "approve", reqs[requester], "--yes", "-o", "json")
		p.as(approver, exit.OK, approver, "action", "release", res["action_id"].(string), "--reason", "recovered", "--yes")
	}
	runBy := 0
	for _, en := range p.journalEntries() {
		if en.RedisUser != "" && en.RedisUser != en.Actor && en.RedisUser != "default" {
			t.Errorf("entry %s by %s written as Redis user %s", en.Event, en.Actor, en.RedisUser)
		}
		if en.Event == journal.ActionApplied && en.Actor == "automation" {
			runBy++
			if en.Who() != "automation (run by carol)" {
				t.Errorf("automation's entry reads %q", en.Who())
			}
		}
	}
	if runBy == 0 {
		t.Error("no entry applied by automation")
	}
}

func (p *perPersonEnv) actionList() []map[string]any {
	p.t.Helper()
	p.env["STORMCTL_REDIS_URL"] = p.base.String()
	out, errOut, code := p.run("alice", "action", "list", "--all", "-o", "json")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		p.t.Fatalf("action list: %d %s %s", code, out, errOut)
	}
	return list
}

// With one shared Redis user, status, plans and policy refusals say that
// roles and approvals are advisory, and how to give each person a user.
func TestSingleIdentityIsSaidOutLoud(t *testing.T) {
	e := newActionEnv(t)
	const advisory = "roles and approvals are advisory"
	if _, msg := e.expect(exit.OK, "alice", "status"); !strings.Contains(msg, advisory) || !strings.Contains(msg, "acl print --role responder --actor NAME") {
		t.Fatalf("status: %s", msg)
	}
	st, _ := e.expect(exit.OK, "alice", "status", "-o", "json")
	if id, _ := st["identity"].(map[string]any); id["shared"] != true || !strings.Contains(st["advisory"].(string), advisory) {
		t.Fatalf("status -o json: %v", st)
	}
	plan, msg := e.expect(exit.OK, "alice", "action", "plan", "retries", "checkout->payments", "off", "--ttl", "10m", "--reason", "look", "-o", "json")
	if !strings.Contains(msg, advisory) || !strings.Contains(plan["advisory"].(string), advisory) {
		t.Fatalf("plan: %s %v", msg, plan)
	}
	if _, msg := e.expect(exit.Refused, "victor", append([]string{"retries", "off", "checkout->payments"}, applyArgs...)...); !strings.Contains(msg, "victor (role viewer) may not use retries levers") || !strings.Contains(msg, advisory) {
		t.Fatalf("policy refusal: %s", msg)
	}
	// Approvals still work under one user, said to be advisory.
	req, _ := e.expect(exit.Pending, "alice", "action", "apply", "autoscaling", "checkout", "frozen", "--ttl", "10m", "--reason", "freeze", "--force", "--yes", "-o", "json")
	res, msg := e.expect(exit.OK, "bob", "action", "approve", req["request_id"].(string), "--yes", "-o", "json")
	if !strings.Contains(msg, advisory) || res["approved_by"] != "bob" {
		t.Fatalf("shared approval: %s %v", msg, res)
	}
}
