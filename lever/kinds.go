package lever

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TargetForm says which targets a kind accepts.
type TargetForm int

// Target forms.
const (
	ServiceOrEdge    TargetForm = iota // service or service->dependency
	DependencyOrEdge                   // dependency or service->dependency
	ServiceOnly                        // service
)

// Spec describes one lever kind: the targets it accepts, its value syntax
// and its maximum TTL.
type Spec struct {
	Kind   Kind
	Form   TargetForm
	Values string // the value syntax, for messages
	MaxTTL time.Duration
	parse  func(string) (string, error)
}

// Specs lists the lever kinds of DESIGN.md, in Kinds order.
var Specs = []Spec{
	{Kind: Retries, Form: ServiceOrEdge, Values: "off or cap:N (N max attempts, 1-100)", MaxTTL: 30 * time.Minute, parse: parseRetries},
	{Kind: Breaker, Form: DependencyOrEdge, Values: "open", MaxTTL: 15 * time.Minute, parse: literal(ValueOpen)},
	{Kind: Autoscaling, Form: ServiceOnly, Values: "frozen", MaxTTL: 2 * time.Hour, parse: literal(ValueFrozen)},
	{Kind: Degraded, Form: ServiceOnly, Values: "a mode name such as on or rules-only", MaxTTL: time.Hour, parse: parseMode},
	{Kind: Shed, Form: ServiceOnly, Values: "a percent from 1 to 100", MaxTTL: 30 * time.Minute, parse: parsePercent},
}

// Lever values with a fixed meaning.
const (
	ValueOff       = "off"    // retries: no retry at all
	ValueCapPrefix = "cap:"   // retries: "cap:N" caps attempts at N
	ValueOpen      = "open"   // breaker: forced open
	ValueFrozen    = "frozen" // autoscaling: frozen
)

// Limits of numeric lever values.
const (
	MaxAttemptsCap = 100 // largest N accepted in "cap:N"
	MaxShedPercent = 100
)

// SpecOf returns the spec of kind k.
func SpecOf(k Kind) (Spec, bool) {
	i := slices.IndexFunc(Specs, func(s Spec) bool { return s.Kind == k })
	if i < 0 {
		return Spec{}, false
	}
	return Specs[i], true
}

// KindNames lists the kinds' names, for messages.
func KindNames() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return names
}

// ParseValue checks and normalises a value for this kind ("30%" → "30").
func (s Spec) ParseValue(v string) (string, error) {
	out, err := s.parse(strings.TrimSpace(v))
	if err != nil {
		return "", fmt.Errorf("%s value %s: %w (want %s)", s.Kind, Quote(v), err, s.Values)
	}
	return out, nil
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
	if s == ValueOff {
		return s, nil
	}
	n, ok := strings.CutPrefix(s, ValueCapPrefix)
	if !ok {
		return "", fmt.Errorf("neither off nor cap:N")
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 || v > MaxAttemptsCap {
		return "", fmt.Errorf("the cap must be a whole number of attempts from 1 to %d", MaxAttemptsCap)
	}
	return ValueCapPrefix + strconv.Itoa(v), nil
}

func parsePercent(s string) (string, error) {
	v, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || v < 1 || v > MaxShedPercent {
		return "", fmt.Errorf("not a whole percent from 1 to %d", MaxShedPercent)
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
	if s == ValueOff || s == "none" {
		return "", fmt.Errorf("to leave degraded mode, release the action that entered it")
	}
	return s, nil
}
