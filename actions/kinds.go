// Package actions pulls stormctl's levers safely: it parses what an actor
// asks for, runs every guard of DESIGN.md in order (validation, policy,
// reason, TTL, evidence, blast radius, approval, conflict, rate limit,
// confirmation), journals every refusal, and writes levers only through
// controlplane. It holds no CLI code: commands parse flags and print.
package actions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/suggest"
	"github.com/stormctl/stormctl/queries"
)

// Kind is a lever kind (controlplane.Kind).
type Kind = controlplane.Kind

// TargetForm says which targets a kind accepts.
type TargetForm int

// Target forms.
const (
	ServiceOrEdge    TargetForm = iota // service or service->dependency
	DependencyOrEdge                   // dependency or service->dependency
	ServiceOnly                        // service
)

// KindSpec describes one lever kind: its targets, values, maximum TTL and
// the saved queries whose evidence supports pulling it.
type KindSpec struct {
	Kind     Kind
	Form     TargetForm
	Values   string // the value syntax, for messages
	MaxTTL   time.Duration
	Evidence []string // saved query ids, any one of which at warn or worse supports the action
	parse    func(string) (string, error)
}

// Specs lists the lever kinds of DESIGN.md, in controlplane.Kinds order.
var Specs = []KindSpec{
	{Kind: controlplane.Retries, Form: ServiceOrEdge, Values: "off or cap:N (N max attempts, 1-100)", MaxTTL: 30 * time.Minute,
		Evidence: []string{"amplification", "retry_ratio"}, parse: parseRetries},
	{Kind: controlplane.Breaker, Form: DependencyOrEdge, Values: "open", MaxTTL: 15 * time.Minute,
		Evidence: []string{"dependency_p99", "amplification", "breaker_open_fraction"}, parse: literal("open")},
	{Kind: controlplane.Autoscaling, Form: ServiceOnly, Values: "frozen", MaxTTL: 2 * time.Hour,
		Evidence: []string{"replica_churn", "breaker_open_fraction"}, parse: literal("frozen")},
	{Kind: controlplane.Degraded, Form: ServiceOnly, Values: "a mode name such as on or rules-only", MaxTTL: time.Hour,
		Evidence: []string{"edge_error_rate", "pool_saturation"}, parse: parseMode},
	{Kind: controlplane.Shed, Form: ServiceOnly, Values: "a percent from 1 to 100", MaxTTL: 30 * time.Minute,
		Evidence: []string{"pool_saturation", "demanded_concurrency"}, parse: parsePercent},
}

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
	names := make([]string, len(Specs))
	for i, ks := range Specs {
		names[i] = string(ks.Kind)
	}
	msg := fmt.Sprintf("unknown lever kind %q (kinds: %s)", s, strings.Join(names, ", "))
	if m := suggest.Closest(s, names); len(m) > 0 {
		msg += "; did you mean " + m[0] + "?"
	}
	return KindSpec{}, fmt.Errorf("%s", msg)
}

// ParseValue checks and normalises a value for this kind ("30%" → "30").
func (ks KindSpec) ParseValue(s string) (string, error) {
	v, err := ks.parse(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("%s value %q: %w (want %s)", ks.Kind, s, err, ks.Values)
	}
	return v, nil
}

func literal(want string) func(string) (string, error) {
	return func(s string) (string, error) {
		if s != want {
			return "", fmt.Errorf("not %s", want)
		}
		return s, nil
	}
}

func parseRetries(s string) (string, error) {
	if s == "off" {
		return s, nil
	}
	n, ok := strings.CutPrefix(s, "cap:")
	if !ok {
		return "", fmt.Errorf("neither off nor cap:N")
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 || v > 100 {
		return "", fmt.Errorf("the cap must be a whole number of attempts from 1 to 100")
	}
	return "cap:" + strconv.Itoa(v), nil
}

func parsePercent(s string) (string, error) {
	v, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || v < 1 || v > 100 {
		return "", fmt.Errorf("not a whole percent from 1 to 100")
	}
	return strconv.Itoa(v), nil
}

// parseMode accepts short lower-case mode names; "off" is refused because
// leaving degraded mode is a release, which restores what was there.
func parseMode(s string) (string, error) {
	if s == "" || len(s) > 32 {
		return "", fmt.Errorf("a mode name has 1 to 32 characters")
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (i > 0 && (r == '-' || r == '_'))
		if !ok {
			return "", fmt.Errorf("a mode name is lower-case letters, digits, - and _")
		}
	}
	if s == "off" || s == "none" {
		return "", fmt.Errorf("to leave degraded mode, release the action that entered it")
	}
	return s, nil
}

// Target is one parsed lever target. Service and Dependency are the parts
// the evidence queries and the inventory check use.
type Target struct {
	Name                string // as written to the lever: "checkout" or "checkout->payments"
	Service, Dependency string
}

// maxTargets bounds a comma list, however high the blast radius allows.
const maxTargets = 100

// ParseTargets splits a comma list of targets and checks each against the
// kind's target form. Duplicates are an error: they would hide the count.
func (ks KindSpec) ParseTargets(s string) ([]Target, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxTargets {
		return nil, fmt.Errorf("%d targets in one action; at most %d", len(parts), maxTargets)
	}
	out := make([]Target, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		t, err := ks.parseTarget(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("target %q is listed twice", t.Name)
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

func (ks KindSpec) parseTarget(s string) (Target, error) {
	if s == "" {
		return Target{}, fmt.Errorf("empty target")
	}
	svc, dep, edge := strings.Cut(s, "->")
	for _, part := range []struct{ role, v string }{{"service", svc}, {"dependency", dep}} {
		if !edge && part.role == "dependency" {
			break
		}
		if part.v == "" {
			return Target{}, fmt.Errorf("target %q: empty %s name", s, part.role)
		}
		if err := queries.ValidateValue(part.role, part.v); err != nil {
			return Target{}, fmt.Errorf("target %q: %w", s, err)
		}
	}
	switch {
	case edge && ks.Form == ServiceOnly:
		return Target{}, fmt.Errorf("target %q: a %s lever targets a service, not service->dependency", s, ks.Kind)
	case edge:
		return Target{Name: s, Service: svc, Dependency: dep}, nil
	case ks.Form == DependencyOrEdge:
		return Target{Name: s, Dependency: s}, nil
	}
	return Target{Name: s, Service: s}, nil
}
