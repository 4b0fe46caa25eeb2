// Package lever is the lever schema that every part of stormctl shares:
// kinds with their value syntax and maximum TTLs, targets, the Lever and
// Change records, the flag contract services read, most-specific-match
// resolution and the read-side Redis key layout. The control plane writes
// it, actions guard it, and the data plane (flags/, resilience/, the flagd
// server, the Kubernetes actuator) reads it. It imports nothing of
// stormctl, so a service that links the data plane links only this.
package lever

import (
	"fmt"
	"slices"
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

// Live says whether the lever holds at now. A lever is absent at its
// expires_at itself, so every reader agrees at the boundary.
func (l *Lever) Live(now time.Time) bool {
	return l.ExpiresAt.IsZero() || now.Before(l.ExpiresAt)
}

// Member is the name of a lever inside index sets and hashes: "kind:target".
func Member(kind Kind, target string) string { return string(kind) + ":" + target }

// ParseMember splits a Member back into kind and target.
func ParseMember(m string) (Kind, string, error) {
	k, t, ok := strings.Cut(m, ":")
	if !ok || t == "" {
		return "", "", fmt.Errorf("malformed lever member %s", Quote(m))
	}
	return Kind(k), t, nil
}

// SplitTarget splits a target "service->dependency"; a bare target is
// returned as service (and is a dependency name for the breaker kind: see
// ScopeOf).
func SplitTarget(target string) (service, dependency string) {
	if s, d, ok := strings.Cut(target, "->"); ok {
		return s, d
	}
	return target, ""
}

// Sort orders levers by kind (in Kinds order) then target.
func Sort(ls []Lever) {
	slices.SortFunc(ls, func(a, b Lever) int {
		if c := slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
}

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
