package lever

import (
	"fmt"
	"strings"
)

// Target is one parsed lever target. Service and Dependency are the parts
// an evaluation context names.
type Target struct {
	Name                string // as written to the lever: "checkout" or "checkout->payments"
	Service, Dependency string
}

// MaxTargets bounds a comma list of targets in one action.
const MaxTargets = 100

// Names are service, dependency and pool names: they appear in Redis keys,
// flag rules and PromQL label matchers, so their charset is one that none
// of those can read as syntax.
const (
	MaxNameLen = 256
	NameChars  = "letters, digits and . - _ : / | @ + ="
)

// NameChar reports whether r may appear in a name.
func NameChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune(".-_:/|@+=", r)
}

// CheckName checks a name given as role ("service", "dependency").
func CheckName(role, v string) error {
	if v == "" {
		return fmt.Errorf("empty %s name", role)
	}
	if len(v) > MaxNameLen {
		return fmt.Errorf("%s name longer than %d bytes", role, MaxNameLen)
	}
	for i, r := range v {
		if !NameChar(r) {
			return fmt.Errorf("%s name: character %q at byte %d is not allowed; use %s (at most %d bytes)",
				role, r, i, NameChars, MaxNameLen)
		}
	}
	return nil
}

// ParseTargets splits a comma list of targets and checks each against the
// kind's target form. Duplicates are an error: they would hide the count.
func (s Spec) ParseTargets(list string) ([]Target, error) {
	parts := strings.Split(list, ",")
	if len(parts) > MaxTargets {
		return nil, fmt.Errorf("%d targets in one action; at most %d", len(parts), MaxTargets)
	}
	out := make([]Target, 0, len(parts))
	seen := map[string]bool{}
	for _, p := range parts {
		t, err := s.ParseTarget(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("target %s is listed twice", Quote(t.Name))
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

// ParseTarget checks one target against the kind's target form.
func (s Spec) ParseTarget(t string) (Target, error) {
	if t == "" {
		return Target{}, fmt.Errorf("empty target")
	}
	svc, dep, edge := strings.Cut(t, "->")
	if err := CheckName("service", svc); err != nil {
		return Target{}, fmt.Errorf("target %s: %w", Quote(t), err)
	}
	if edge {
		if err := CheckName("dependency", dep); err != nil {
			return Target{}, fmt.Errorf("target %s: %w", Quote(t), err)
		}
	}
	switch {
	case edge && s.Form == ServiceOnly:
		return Target{}, fmt.Errorf("target %s: a %s lever targets a service, not service->dependency", Quote(t), s.Kind)
	case edge:
		return Target{Name: t, Service: svc, Dependency: dep}, nil
	case s.Form == DependencyOrEdge:
		return Target{Name: t, Dependency: t}, nil
	}
	return Target{Name: t, Service: t}, nil
}

// Scope is what an evaluation context can name of a lever's target: a bare
// breaker target is a dependency, any other bare target a service. It is
// comparable, so readers key maps by it.
type Scope struct {
	Kind                Kind
	Service, Dependency string
}

// ScopeOf returns the scope of the lever (kind, target).
func ScopeOf(kind Kind, target string) Scope {
	s, d := SplitTarget(target)
	if kind == Breaker && d == "" {
		s, d = "", s
	}
	return Scope{kind, s, d}
}

// Target is the lever target the scope names.
func (s Scope) Target() string {
	switch {
	case s.Service != "" && s.Dependency != "":
		return s.Service + "->" + s.Dependency
	case s.Service != "":
		return s.Service
	}
	return s.Dependency
}

// Match finds the lever of kind that applies to a caller service and a
// dependency, most specific first: service->dependency, then service, then
// dependency. get looks a scope up; Match stops at the first it finds.
func Match[T any](kind Kind, service, dependency string, get func(Scope) (T, bool)) (T, bool) {
	if service != "" && dependency != "" {
		if v, ok := get(Scope{kind, service, dependency}); ok {
			return v, true
		}
	}
	if service != "" {
		if v, ok := get(Scope{kind, service, ""}); ok {
			return v, true
		}
	}
	if dependency != "" {
		return get(Scope{kind, "", dependency})
	}
	var zero T
	return zero, false
}
