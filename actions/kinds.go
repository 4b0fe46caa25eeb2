// Package actions pulls stormctl's levers safely: it parses what an actor
// asks for, runs every guard of DESIGN.md in order (validation, policy,
// reason, TTL, evidence, blast radius, approval, conflict, rate limit,
// confirmation), journals every refusal, and writes levers only through
// controlplane. It holds no CLI code: commands parse flags and print.
package actions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/suggest"
	"github.com/stormctl/stormctl/lever"
)

// Kind is a lever kind.
type Kind = lever.Kind

// Target is one parsed lever target.
type Target = lever.Target

// KindSpec describes one lever kind: the schema's target form, value syntax
// and maximum TTL, plus the saved queries whose evidence supports pulling
// it.
type KindSpec struct {
	lever.Spec
	Evidence []string // saved query ids, any one of which at warn or worse supports the action
}

// evidence names the saved queries that support pulling each kind.
var evidence = map[Kind][]string{
	lever.Retries:     {"amplification", "retry_ratio"},
	lever.Breaker:     {"dependency_p99", "amplification", "breaker_open_fraction"},
	lever.Autoscaling: {"replica_churn", "breaker_open_fraction"},
	lever.Degraded:    {"edge_error_rate", "pool_saturation", "dependency_p99"},
	lever.Shed:        {"pool_saturation", "demanded_concurrency"},
}

// Specs lists the lever kinds of DESIGN.md, in lever.Kinds order.
var Specs = func() []KindSpec {
	out := make([]KindSpec, len(lever.Specs))
	for i, s := range lever.Specs {
		out[i] = KindSpec{Spec: s, Evidence: evidence[s.Kind]}
	}
	return out
}()

// SpecOf returns the spec of kind k.
func SpecOf(k Kind) (KindSpec, bool) {
	i := slices.IndexFunc(Specs, func(s KindSpec) bool { return s.Kind == k })
	if i < 0 {
		return KindSpec{}, false
	}
	return Specs[i], true
}

// ParseKind checks a kind name.
func ParseKind(s string) (KindSpec, error) {
	if ks, ok := SpecOf(Kind(s)); ok {
		return ks, nil
	}
	names := lever.KindNames()
	msg := fmt.Sprintf("unknown lever kind %s (kinds: %s)", lever.Quote(s), strings.Join(names, ", "))
	if m := suggest.Closest(s, names); len(m) > 0 {
		msg += "; did you mean " + m[0] + "?"
	}
	return KindSpec{}, fmt.Errorf("%s", msg)
}
