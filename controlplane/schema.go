// Package controlplane owns stormctl's shared state in Redis: the lever key
// schema, the Lua scripts that change it atomically, the change feed and the
// acknowledgements of provider instances. It knows nothing about PromQL.
package controlplane

import (
	"fmt"
	"strings"
	"time"
)

// Kind is a lever kind.
type Kind string

// The lever kinds of DESIGN.md.
const (
	Retries     Kind = "retries"
	Breaker     Kind = "breaker"
	Autoscaling Kind = "autoscaling"
	Degraded    Kind = "degraded"
	Shed        Kind = "shed"
)

// Kinds lists every lever kind in a stable order.
var Kinds = []Kind{Retries, Breaker, Autoscaling, Degraded, Shed}

// Lever is one active lever: (kind, target) → value, held by one action.
// Its Redis key expires at ExpiresAt, so an expired lever is absent for
// every reader at once.
type Lever struct {
	Kind      Kind      `json:"kind"`
	Target    string    `json:"target"`
	Value     string    `json:"value"`
	ActionID  string    `json:"action_id"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	Incident  string    `json:"incident,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Version counts every write to this (kind, target), including releases;
	// writers state the version they expect and lose if it moved.
	Version int64 `json:"version"`
	// Previous is the lever this one superseded, restored on release if it
	// has not expired by then.
	Previous *Lever `json:"previous,omitempty"`
}

// Service and Dependency split a target "service->dependency"; a bare target
// is returned as Service (and is a dependency name for the breaker kind).
func SplitTarget(target string) (service, dependency string) {
	if s, d, ok := strings.Cut(target, "->"); ok {
		return s, d
	}
	return target, ""
}

// Keys names every Redis key of one control-plane namespace. All keys share
// the hash tag {namespace}, so the Lua scripts work on Redis Cluster.
type Keys struct {
	prefix string
}

// DefaultNamespace is used when the config names none.
const DefaultNamespace = "default"

// NewKeys returns the key schema for namespace ("" means DefaultNamespace).
func NewKeys(namespace string) Keys {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return Keys{prefix: "stormctl:{" + namespace + "}:"}
}

// Prefix is the common prefix of every key, e.g. "stormctl:{default}:".
func (k Keys) Prefix() string { return k.prefix }

// Member is the name of a lever inside index sets and hashes: "kind:target".
func Member(kind Kind, target string) string { return string(kind) + ":" + target }

// ParseMember splits a Member back into kind and target.
func ParseMember(m string) (Kind, string, error) {
	k, t, ok := strings.Cut(m, ":")
	if !ok || t == "" {
		return "", "", fmt.Errorf("malformed lever member %q", m)
	}
	return Kind(k), t, nil
}

// Lever is the string key holding a lever's JSON; it carries a PEXPIREAT.
func (k Keys) Lever(kind Kind, target string) string {
	return k.prefix + "lever:" + Member(kind, target)
}

// Index is a sorted set of the members of every lever written and not yet
// reaped, scored by expiry in Unix milliseconds. Readers list levers from it
// and MGET their keys; an absent key means expired or released.
func (k Keys) Index() string { return k.prefix + "levers" }

// Versions is a hash member → version counter; it never expires, so a
// version check still works after a lever has expired.
func (k Keys) Versions() string { return k.prefix + "versions" }

// Changes is the pub/sub channel on which every lever write is published as
// a Change in JSON.
func (k Keys) Changes() string { return k.prefix + "changes" }

// Journal is the Redis stream of journal entries.
func (k Keys) Journal() string { return k.prefix + "journal" }

// JournalHead holds the hash of the last journal entry (the chain head).
func (k Keys) JournalHead() string { return k.prefix + "journal:head" }

// Instances is a sorted set of provider instance ids scored by their last
// heartbeat in Unix milliseconds.
func (k Keys) Instances() string { return k.prefix + "instances" }

// Ack is a hash member → version applied by one provider instance; it
// expires unless the instance keeps heartbeating.
func (k Keys) Ack(instance string) string { return k.prefix + "ack:" + instance }

// Op is what a Change did to a lever.
type Op string

// Change operations.
const (
	OpSet Op = "set" // a lever was applied, extended or superseded
	OpDel Op = "del" // a lever was released (or restored to its previous value: OpSet)
)

// Change is the message published on Keys.Changes for every write. Set
// changes carry the whole lever, so subscribers need no extra read.
type Change struct {
	Op      Op     `json:"op"`
	Kind    Kind   `json:"kind"`
	Target  string `json:"target"`
	Version int64  `json:"version"`
	Lever   *Lever `json:"lever,omitempty"`
}
