package controlplane

import (
	"fmt"
	"slices"
	"strings"
)

// Role is a Redis ACL profile for stormctl users.
type Role string

// The roles `stormctl acl print` knows.
//
// Viewer reads levers, the journal and the change feed: no scripts and no
// writes, so its apply is refused by the server itself (NOPERM).
//
// Responder may also run the control-plane scripts (EVALSHA, EVAL and
// SCRIPT LOAD for the NOSCRIPT fallback). Redis checks every command a
// script runs against the caller's rights, so the responder is also granted
// exactly the writes the scripts make (SET, DEL, HSET, HDEL, ZADD, ZREM,
// XADD, SADD, PUBLISH, INCR and PEXPIRE for the rate limit, and the
// consumer-group commands of the notification outbox) on the namespace's
// shared keys and channel, and on its own actor's keys only
// when it is a per-person user (ACLRulesFor with an actor): stormctl then
// cannot claim another actor, because every script declares the actor's
// key. Redis cannot grant a command "only from inside a script": a
// responder with redis-cli could still write a shared key directly, under
// its own name. The journal and `journal verify` make such a write visible
// (a lever without its entry), they cannot prevent it.
//
// Commander has the responder's rights and no others. Approving a request
// is a version-checked lever write plus a journal entry, the same commands;
// the two-person rule (approver differs from requester, by declared actor
// and by authenticated Redis user) is enforced by stormctl, and policy in
// the config decides which users may approve. A separate role keeps the
// approvers' credentials distinct so that policy and the journal can tell
// them apart.
//
// Service is for the services that obey the levers (flags providers and
// the resilience middleware): it reads everything in the namespace but
// writes only its acknowledgements (the instances set and ack hashes) and
// the fleet-wide retry budgets and probe counters, using Redis 7 per-key
// write selectors. It can never write a lever or the journal.
//
// Flagd is for `stormctl flagd serve`: it reads levers and the change feed
// and writes nothing but its acknowledgements (the instances set and ack
// hashes, for "seen by"): no lever, no journal, no budget, no script.
//
// Actuator is for the actuators that apply levers to real systems (the
// Kubernetes actuator): the service's rights on acknowledgements, plus
// appending to the journal (the append script's XADD and head SET) and
// writing its status report. It can never write a lever.
const (
	Viewer    Role = "viewer"
	Flagd     Role = "flagd"
	Service   Role = "service"
	Actuator  Role = "actuator"
	Responder Role = "responder"
	Commander Role = "commander"
	// Automation is for unattended writers: playbooks run without a
	// person, scripts, the autopilot. Its rights on Redis are the
	// responder's; policy gives it no approval right, and bound to the
	// actor "automation" (acl print --actor automation) nobody else can
	// write as it.
	Automation Role = "automation"
)

// Roles lists the roles in increasing order of rights.
var Roles = []Role{Viewer, Flagd, Service, Actuator, Responder, Commander, Automation}

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want viewer, flagd, service, actuator, responder, commander or automation)", s)
}

// connectionRules let a go-redis client connect and say who it is, and
// nothing else outside the namespace.
var connectionRules = []string{"+hello", "+auth", "+ping", "+client|setname", "+client|id",
	"+acl|whoami", "+cluster|slots", "+cluster|shards", "+cluster|nodes"}

// ACLRules returns the ACL SETUSER rules of a shared user for role, one
// that may act as any actor (see ACLRulesFor).
func ACLRules(role Role, k Keys) []string { return ACLRulesFor(role, k, "") }

// ACLRulesFor returns the ACL SETUSER rules for role, after the user name
// and before any password rule: keys and channels limited to the namespace
// of k, then command categories. With actor set, the writers (responder,
// commander, automation, actuator) may write the keys of that actor only
// (Keys.Actor, Keys.ActorRate): every script that journals sets its
// entry's actor key, so acting as anyone else is refused by Redis (NOPERM).
// With actor "" they may write as any actor: a shared user.
func ACLRulesFor(role Role, k Keys, actor string) []string {
	p := k.Prefix()
	keys := []string{"~" + p + "*"}
	switch role {
	case Service:
		keys = []string{"%R~" + p + "*", "%W~" + k.Instances(), "%W~" + p + "ack:*", "%W~" + p + "budget:*", "%W~" + p + "probes:*"}
	case Flagd:
		keys = []string{"%R~" + p + "*", "%W~" + k.Instances(), "%W~" + p + "ack:*"}
	case Actuator:
		// The append script's keys need read and write on one pattern:
		// Redis checks a script's declared keys pattern by pattern.
		keys = append([]string{"%R~" + p + "*", "%W~" + k.Instances(), "%W~" + p + "ack:*", "~" + k.Journal(), "~" + k.JournalHead(),
			"~" + k.Synced(), "%W~" + p + "status:*"}, actorKeys(k, actor)...)
	case Responder, Commander, Automation:
		keys = append(writerKeys(k), actorKeys(k, actor)...)
	}
	rules := append([]string{"reset", "on"}, keys...)
	rules = append(rules, "&"+p+"*", "-@all", "+@read", "-@dangerous")
	rules = append(rules, connectionRules...)
	rules = append(rules, "+subscribe", "+unsubscribe")
	switch role {
	case Viewer:
		return rules
	case Flagd:
		return append(rules, "+multi", "+exec", "+zadd", "+zrem", "+zremrangebyscore", "+del", "+hset", "+pexpire")
	case Service:
		return append(rules, "+multi", "+exec", "+zadd", "+zrem", "+zremrangebyscore", "+del", "+hset", "+pexpire",
			"+incr", "+evalsha", "+eval", "+script|load", "+script|exists")
	case Actuator:
		return append(rules, "+multi", "+exec", "+zadd", "+zrem", "+zremrangebyscore", "+del", "+hset", "+pexpire",
			"+evalsha", "+eval", "+script|load", "+script|exists", "+set", "+xadd")
	}
	return append(rules, "+evalsha", "+eval", "+script|load", "+script|exists",
		"+set", "+del", "+hset", "+hdel", "+zadd", "+zrem", "+xadd", "+sadd", "+publish", "+incr", "+pexpire",
		"+xreadgroup", "+xautoclaim", "+xclaim", "+xack", "+xdel", "+xgroup|create", "+xgroup|delconsumer")
}

// writerKeys are the keys the control-plane scripts write that belong to
// nobody in particular: levers, their index, versions and held copies, the
// journal, idempotency keys, records, the alert receivers' event claims and
// notification outbox, and the overall rate counter; every key of the
// namespace may be read. Actor keys are not among them.
func writerKeys(k Keys) []string {
	p := k.Prefix()
	return []string{"%R~" + p + "*", "~" + p + "lever:*", "~" + k.Index(), "~" + k.Versions(), "~" + k.Held(),
		"~" + k.Journal(), "~" + k.JournalHead(), "~" + k.Synced(), "~" + p + "idem:*", "~" + p + "records:*",
		"~" + p + "claim:*", "~" + k.Notices(), "~" + globEscape(k.OverallRate())}
}

// actorKeys are the read-write patterns of actor's keys; "" is any actor.
func actorKeys(k Keys, actor string) []string {
	if actor == "" {
		return []string{"~" + globEscape(k.Actor("")) + "*", "~" + globEscape(k.ActorRate("")) + "*"}
	}
	return []string{"~" + globEscape(k.Actor(actor)), "~" + globEscape(k.ActorRate(actor))}
}

// globEscape quotes the characters Redis key patterns treat specially, so
// that a pattern matches exactly s.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ACLCommand is the `ACL SETUSER` command line for user with role;
// password is a rule such as "#<sha256 hex>" or ">secret" (empty: none).
func ACLCommand(user string, role Role, k Keys, password string) string {
	return strings.Join(ACLArgs(user, role, k, "", password), " ")
}

// ACLArgs are the arguments of the ACL SETUSER command for user with role,
// bound to actor ("" for a shared user), as sent to a server.
func ACLArgs(user string, role Role, k Keys, actor, password string) []string {
	parts := append([]string{"ACL", "SETUSER", user}, ACLRulesFor(role, k, actor)...)
	if password != "" {
		parts = slices.Insert(parts, 4, password) // after "reset", which would clear it
	}
	return parts
}
