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
// XADD, SADD, PUBLISH, and INCR and PEXPIRE for the rate limit) on the
// namespace's keys and channel. Redis cannot
// grant a command "only from inside a script": a responder with redis-cli
// could write a key directly. The journal and `journal verify` make such a
// write visible (a lever without its entry), they cannot prevent it.
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
)

// Roles lists the roles in increasing order of rights.
var Roles = []Role{Viewer, Flagd, Service, Actuator, Responder, Commander}

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want viewer, flagd, service, actuator, responder or commander)", s)
}

// connectionRules let a go-redis client connect and say who it is, and
// nothing else outside the namespace.
var connectionRules = []string{"+hello", "+auth", "+ping", "+client|setname", "+client|id",
	"+acl|whoami", "+cluster|slots", "+cluster|shards", "+cluster|nodes"}

// ACLRules returns the ACL SETUSER rules for role, after the user name and
// before any password rule: keys and channels limited to the namespace of
// k, then command categories.
func ACLRules(role Role, k Keys) []string {
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
		keys = []string{"%R~" + p + "*", "%W~" + k.Instances(), "%W~" + p + "ack:*", "~" + k.Journal(), "~" + k.JournalHead(),
			"~" + k.Synced(), "%W~" + p + "status:*"}
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
		"+set", "+del", "+hset", "+hdel", "+zadd", "+zrem", "+xadd", "+sadd", "+publish", "+incr", "+pexpire")
}

// ACLCommand is the `ACL SETUSER` command line for user with role;
// password is a rule such as "#<sha256 hex>" or ">secret" (empty: none).
func ACLCommand(user string, role Role, k Keys, password string) string {
	parts := append([]string{"ACL", "SETUSER", user}, ACLRules(role, k)...)
	if password != "" {
		parts = slices.Insert(parts, 4, password) // after "reset", which would clear it
	}
	return strings.Join(parts, " ")
}
